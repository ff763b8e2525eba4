// Routes /xrpc/<nsid> to the service's handlers: query or procedure as the lexicon says, JSON in and out validated against it, errors as {error, message}.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { mapErrorToHttp, XrpcError } from "./http-errors.js";
import type { LexiconChecks } from "./lexicon-schemas.js";

/** What a handler answers: a JSON value (checked against the method's output) or a byte stream of a declared type. */
export type XrpcOutput =
  | { readonly kind: "json"; readonly value: unknown }
  | { readonly kind: "stream"; readonly contentType: string; readonly stream: Readable };

/** A method's handler: called with the validated parameters (queries) or input (procedures); throws to answer an error. */
export type XrpcHandler = (input: {
  readonly params: Record<string, unknown>;
  readonly body: unknown;
}) => Promise<XrpcOutput>;

export interface XrpcRouterOptions {
  readonly lexicons: LexiconChecks;
  readonly handlers: ReadonlyMap<string, XrpcHandler>;
  /** A procedure's JSON body larger than this is refused with 413 before it is parsed. */
  readonly maxBodyBytes: number;
  /** Told of every 5xx with what was thrown (the service logs it). */
  readonly onServerError?: (error: unknown) => void;
}

/** Answers one request for `/xrpc/<nsid>`; never rejects (every failure is an XRPC error answer). */
export function createXrpcRouter(
  options: XrpcRouterOptions,
): (req: IncomingMessage, res: ServerResponse, nsid: string, query: URLSearchParams) => Promise<void> {
  return async (req, res, nsid, query) => {
    try {
      const type = options.lexicons.methodType(nsid);
      const handler = options.handlers.get(nsid);
      if (type === undefined || handler === undefined)
        throw new XrpcError(501, "MethodNotImplemented", `no method ${nsid} here`);
      const expected = type === "query" ? "GET" : "POST";
      if (req.method !== expected && !(type === "query" && req.method === "HEAD")) {
        res.setHeader("Allow", expected);
        throw new XrpcError(405, "InvalidRequest", `${nsid} is a ${type}: use ${expected}`);
      }
      const params = options.lexicons.params(nsid, readQuery(query));
      const body =
        type === "procedure" ? options.lexicons.input(nsid, await readJsonBody(req, options.maxBodyBytes)) : undefined;
      const output = await handler({ params, body });
      if (output.kind === "json") {
        writeJson(res, 200, options.lexicons.output(nsid, output.value));
        return;
      }
      res.writeHead(200, { "Content-Type": output.contentType });
      await pipeline(output.stream, res);
    } catch (error) {
      const { status, body, headers } = mapErrorToHttp(error);
      if (status >= 500) options.onServerError?.(error);
      if (res.headersSent) {
        res.destroy(); // a stream that failed midway: the client sees a cut connection, never a tar that looks whole
        return;
      }
      writeJson(res, status, body, headers);
    }
  };
}

/** Writes a JSON answer. */
export function writeJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

function readQuery(query: URLSearchParams): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const [name, value] of query) {
    if (name in raw) throw new XrpcError(400, "InvalidRequest", `the parameter ${name} is given twice`);
    raw[name] = value;
  }
  return raw;
}

/** The request's JSON body: 415 for another type, 413 past `max` bytes (read no further), 400 when it does not parse. */
async function readJsonBody(req: IncomingMessage, max: number): Promise<unknown> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json")
    throw new XrpcError(
      415,
      "InvalidRequest",
      `expected a JSON body (Content-Type: application/json), got ${type === "" ? "none" : JSON.stringify(type)}`,
    );
  const tooLarge = (): XrpcError =>
    new XrpcError(413, "PayloadTooLarge", `the request body is larger than ${max} bytes`);
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > max) {
    req.resume();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      req.resume();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch (error) {
    throw new XrpcError(400, "InvalidRequest", `the request body is not JSON: ${(error as Error).message}`);
  }
}
