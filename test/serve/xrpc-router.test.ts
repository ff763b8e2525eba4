import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { XrpcError } from "../../src/serve/http-errors.js";
import { loadLexicons, NSID } from "../../src/serve/lexicon-schemas.js";
import { createXrpcRouter, type XrpcHandler } from "../../src/serve/xrpc-router.js";

describe("the XRPC router", () => {
  let server: Server;
  let base: string;
  const seen: unknown[] = [];
  before(async () => {
    const lexicons = await loadLexicons();
    const handlers = new Map<string, XrpcHandler>([
      [
        NSID.getRun,
        async ({ params }) => {
          seen.push(params);
          if (params.runId === "missing") throw new XrpcError(400, "RunNotFound", "no run missing");
          if (params.runId === "bad-output") return { kind: "json", value: { runId: "x" } };
          if (params.runId === "bug") throw new Error("secret detail");
          if (params.runId === "busy") throw new XrpcError(503, "StateUnwritable", "no space", 30);
          return {
            kind: "json",
            value: { runId: params.runId, status: "pending", createdAt: new Date().toISOString() },
          };
        },
      ],
      [NSID.listRuns, async ({ params }) => ({ kind: "json", value: { runs: [], cursor: String(params.limit) } })],
      [
        NSID.cancelRun,
        async ({ body }) => {
          const { runId } = body as { runId: string };
          if (runId === "input") throw new InputError("bad thing");
          return { kind: "json", value: { runId, status: "cancelled" } };
        },
      ],
      [
        NSID.getOutputs,
        async () => ({
          kind: "stream",
          contentType: "application/x-tar",
          stream: Readable.from([Buffer.from("tarbytes")]),
        }),
      ],
    ]);
    const route = createXrpcRouter({ lexicons, handlers, maxBodyBytes: 100 });
    server = createServer((req, res) => {
      const url = new URL(req.url!, "http://x");
      void route(req, res, url.pathname.slice("/xrpc/".length), url.searchParams);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/xrpc/`;
  });
  after(() => server.close());

  const post = (nsid: string, body: string, type = "application/json") =>
    fetch(base + nsid, { method: "POST", headers: { "Content-Type": type }, body });

  it("answers a query with its handler's JSON after coercing the parameters to the lexicon's types", async () => {
    const res = await fetch(`${base}${NSID.listRuns}?limit=7`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { runs: [], cursor: "7" });
  });

  it("refuses a parameter the lexicon does not accept with 400 InvalidRequest", async () => {
    const res = await fetch(`${base}${NSID.listRuns}?limit=1000`);
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: string; message: string };
    assert.equal(body.error, "InvalidRequest");
    assert.match(body.message, /limit/);
  });

  it("refuses a missing required parameter before the handler is called", async () => {
    const before = seen.length;
    const res = await fetch(`${base}${NSID.getRun}`);
    assert.equal(res.status, 400);
    assert.equal(seen.length, before);
  });

  it("answers a handler's XrpcError with its status and {error, message}", async () => {
    const res = await fetch(`${base}${NSID.getRun}?runId=missing`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: "RunNotFound", message: "no run missing" });
  });

  it("sends Retry-After with a refusal that says when to come back", async () => {
    const res = await fetch(`${base}${NSID.getRun}?runId=busy`);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "30");
    assert.equal((await fetch(`${base}${NSID.getRun}?runId=missing`)).headers.get("retry-after"), null);
  });

  it("answers 500 without the detail of an unexpected error", async () => {
    const res = await fetch(`${base}${NSID.getRun}?runId=bug`);
    assert.equal(res.status, 500);
    assert.doesNotMatch(await res.text(), /secret detail/);
  });

  it("answers 500 when a handler's output does not match the lexicon", async () => {
    const res = await fetch(`${base}${NSID.getRun}?runId=bad-output`);
    assert.equal(res.status, 500);
  });

  it("takes a procedure's JSON input, validated, and maps an InputError to 400", async () => {
    assert.deepEqual(await (await post(NSID.cancelRun, JSON.stringify({ runId: "r1" }))).json(), {
      runId: "r1",
      status: "cancelled",
    });
    const bad = await post(NSID.cancelRun, JSON.stringify({ runId: "input" }));
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { message: string }).message, "bad thing");
    const invalid = await post(NSID.cancelRun, JSON.stringify({ run: 1 }));
    assert.equal(invalid.status, 400);
  });

  it("refuses a body that is not JSON, one of another type, and one over the size limit", async () => {
    assert.equal((await post(NSID.cancelRun, "{nope")).status, 400);
    assert.equal((await post(NSID.cancelRun, "{}", "text/plain")).status, 415);
    const big = await post(NSID.cancelRun, JSON.stringify({ runId: "x".repeat(200) }));
    assert.equal(big.status, 413);
    assert.equal(((await big.json()) as { error: string }).error, "PayloadTooLarge");
  });

  it("refuses the wrong HTTP method and an unknown method", async () => {
    assert.equal((await fetch(`${base}${NSID.cancelRun}`)).status, 405);
    assert.equal((await post(NSID.getRun, "{}")).status, 405);
    assert.equal((await fetch(`${base}dev.knotless.runner.nothing`)).status, 501);
  });

  it("streams a handler's bytes with their content type", async () => {
    const res = await fetch(`${base}${NSID.getOutputs}?runId=r1`);
    assert.equal(res.headers.get("content-type"), "application/x-tar");
    assert.equal(await res.text(), "tarbytes");
  });
});
