// Small HTTP helpers: read a bounded JSON body, write JSON and Status responses.

import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError, badRequest } from "./api-error.js";

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

/** Parses a JSON request body; protobuf and other encodings are refused with 415. */
export async function readJsonBody(req: IncomingMessage): Promise<any> {
  const type = String(req.headers["content-type"] ?? "application/json");
  if (type.includes("protobuf")) {
    throw new ApiError(
      415,
      "UnsupportedMediaType",
      "the local cluster accepts JSON request bodies only (kubectl's typed `create secret|namespace|...` send protobuf; use a manifest with `create -f`)",
    );
  }
  const body = await readBody(req);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (e) {
    throw badRequest(`invalid JSON body: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-cache, private" });
  res.end(text);
}

export function sendError(res: ServerResponse, error: unknown): void {
  const apiError =
    error instanceof ApiError ? error : new ApiError(500, "InternalError", `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, apiError.code, apiError.toStatus());
}
