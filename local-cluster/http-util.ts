// Small HTTP helpers: read a bounded JSON (or protobuf) body, write JSON and Status responses.

import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError, badRequest } from "./api-error.js";
import { decodeProtobufBody } from "./protobuf-body.js";

const MAX_BODY_BYTES = 8 * 1024 * 1024;

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, "BadRequest", "request entity too large"));
        req.destroy();
      } else chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * Parses a request body into its JSON shape. A protobuf body (kubectl 1.33's typed subcommands) is decoded when
 * its kind has a field table (local-cluster/proto-messages.ts: reviews, TokenRequest, RBAC, ServiceAccount);
 * other protobuf kinds are refused with 415.
 */
export async function readJsonBody(req: IncomingMessage): Promise<any> {
  const type = String(req.headers["content-type"] ?? "application/json");
  if (type.includes("protobuf")) return decodeProtobufRequest(await readBody(req));
  const body = await readBody(req);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (e) {
    throw badRequest(`invalid JSON body: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function decodeProtobufRequest(body: Buffer): unknown {
  let decoded;
  try {
    decoded = decodeProtobufBody(body);
  } catch (e) {
    throw badRequest(`invalid protobuf body: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (decoded) return decoded;
  throw new ApiError(
    415,
    "UnsupportedMediaType",
    "the local cluster decodes protobuf request bodies of reviews, TokenRequest, RBAC objects and ServiceAccounts only (kubectl's typed `create secret|namespace|job ...` send protobuf; use a manifest with `create -f`)",
  );
}

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-cache, private",
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: unknown): void {
  const apiError =
    error instanceof ApiError
      ? error
      : new ApiError(
          500,
          "InternalError",
          `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`,
        );
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, apiError.code, apiError.toStatus());
}
