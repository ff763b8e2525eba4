// One blocking HTTP request for the crash path, made by a short node child: the event loop can no longer be trusted.
import { spawnSync } from "node:child_process";

export interface SyncRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly tls: {
    readonly ca?: string;
    readonly cert?: string;
    readonly key?: string;
    readonly rejectUnauthorized: boolean;
    readonly servername?: string;
  };
}

export type SyncAnswer = { readonly status: number; readonly body: string } | { readonly error: string };

// Reads the request as JSON on stdin (credentials never in argv), prints {status, body} or {error}.
const CHILD = `
const input = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const url = new URL(input.url);
const lib = require(url.protocol === "https:" ? "node:https" : "node:http");
const headers = { ...input.headers, ...(input.body === undefined ? {} : { "Content-Length": Buffer.byteLength(input.body) }) };
const req = lib.request(url, { method: input.method, headers, ...input.tls }, (res) => {
  let body = "";
  res.setEncoding("utf8");
  res.on("data", (d) => (body += d));
  res.on("end", () => process.stdout.write(JSON.stringify({ status: res.statusCode, body })));
});
req.on("error", (e) => process.stdout.write(JSON.stringify({ error: e.message })));
req.end(input.body);
`;

/** Sends `request` and blocks until the answer or `timeoutMs`; never throws. */
export function requestSync(request: SyncRequest, timeoutMs: number): SyncAnswer {
  const child = spawnSync(process.execPath, ["-e", CHILD], {
    input: JSON.stringify(request),
    timeout: timeoutMs,
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
  });
  if (child.error)
    return {
      error:
        (child.error as NodeJS.ErrnoException).code === "ETIMEDOUT"
          ? `no answer within ${timeoutMs} ms`
          : child.error.message,
    };
  try {
    return JSON.parse(child.stdout) as SyncAnswer;
  } catch {
    return { error: `the request child ended ${child.status ?? child.signal} without an answer` };
  }
}
