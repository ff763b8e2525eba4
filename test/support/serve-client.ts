// A test client of `serve`: XRPC calls whose every answer is checked against the lexicons, and the two streams over WebSocket and NDJSON.
import assert from "node:assert/strict";
import WebSocket from "ws";
import { ANY_CALL_ERRORS, loadLexicons, type LexiconChecks } from "../../src/serve/lexicon-schemas.js";

export interface ServeClient {
  readonly lexicons: LexiconChecks;
  /** A query or procedure: the parsed JSON answer, validated against the method's output (or the error shape, its name declared by the method's lexicon). */
  call(
    nsid: string,
    input: { params?: Record<string, string>; body?: unknown; token?: string | null },
  ): Promise<{ status: number; body: any }>;
  /** Raw fetch with the token. */
  fetch(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** A WebSocket's text frames until it closes; resolves with the frames and the close code. */
  followWs(
    path: string,
    options?: { token?: string | null; until?: (frames: string[]) => boolean },
  ): Promise<{ frames: string[]; code: number }>;
  /** NDJSON lines until the response ends (or `until` says stop). */
  followNdjson(path: string, options?: { until?: (lines: string[]) => boolean }): Promise<string[]>;
}

export async function createServeClient(base: string, token: string): Promise<ServeClient> {
  const lexicons = await loadLexicons();
  const auth = (t: string | null | undefined): Record<string, string> =>
    t === null ? {} : { Authorization: `Bearer ${t ?? token}` };
  const client: ServeClient = {
    lexicons,
    async call(nsid, input) {
      const type = lexicons.methodType(nsid);
      const query = new URLSearchParams(input.params ?? {}).toString();
      const res = await fetch(`${base}/xrpc/${nsid}${query ? `?${query}` : ""}`, {
        method: type === "procedure" ? "POST" : "GET",
        headers: { ...auth(input.token), ...(type === "procedure" ? { "Content-Type": "application/json" } : {}) },
        ...(type === "procedure" ? { body: JSON.stringify(input.body ?? {}) } : {}),
      });
      const body = (await res.json()) as any;
      if (res.status === 200) {
        lexicons.output(nsid, body);
        if (body.result !== undefined) lexicons.record(body.result);
        for (const run of body.runs ?? []) lexicons.def("runView", run);
      } else {
        assert.equal(typeof body.error, "string");
        assert.equal(typeof body.message, "string");
        assert.ok(
          [...ANY_CALL_ERRORS, ...lexicons.errors(nsid)].includes(body.error),
          `${nsid} answered ${res.status} ${body.error}, which its lexicon does not declare`,
        );
      }
      return { status: res.status, body };
    },
    fetch: (path, init = {}) =>
      fetch(`${base}${path}`, {
        ...init,
        headers: { ...auth(init.token), ...(init.headers as Record<string, string> | undefined) },
      }),
    followWs(path, options = {}) {
      return new Promise((resolve, reject) => {
        const ws = new WebSocket(`${base.replace(/^http/, "ws")}${path}`, { headers: auth(options.token) });
        const frames: string[] = [];
        ws.on("message", (data: Buffer) => {
          frames.push(data.toString("utf8"));
          if (options.until?.(frames)) ws.close(1000);
        });
        ws.on("close", (code: number) => resolve({ frames, code }));
        ws.on("unexpected-response", (_req, res) =>
          reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })),
        );
        ws.on("error", reject);
      });
    },
    async followNdjson(path, options = {}) {
      const controller = new AbortController();
      const res = await fetch(`${base}${path}`, {
        headers: { ...auth(undefined), Accept: "application/x-ndjson" },
        signal: controller.signal,
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /application\/x-ndjson/);
      const lines: string[] = [];
      let tail = "";
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          tail += Buffer.from(chunk).toString("utf8");
          const parts = tail.split("\n");
          tail = parts.pop()!;
          lines.push(...parts);
          if (options.until?.(lines)) {
            controller.abort();
            break;
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      }
      return lines;
    },
  };
  return client;
}

/** Parses Prometheus' text format into sample name{labels} → value, failing on a line that is not a sample or a comment. */
export function parsePrometheusText(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(match, `not a Prometheus sample line: ${line}`);
    samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}
