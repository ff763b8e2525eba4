// `serve` (the built bin) against an API server that never answers: a SIGTERM drain that abandons its run exits 3, bounded.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { createServeClient } from "../support/serve-client.js";
import { startServeProcess, writeServeToken } from "../support/serve-process.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "drain-exit-test-token";
/** The sync delete of an abandoned run's Job waits this long for the server (RunService.drain's deleteTimeoutMs). */
const ABANDON_DELETE_MS = 10_000;

describe("serve's SIGTERM drain against an API server that never answers", () => {
  const held: IncomingMessage[] = [];
  const server = createServer((req) => void held.push(req)); // every call read and never answered
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("exits 3 once the drain has abandoned the run and said so, without waiting for the run's calls to time out", async () => {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const dir = makeTestTempDir("serve-drain-exit-");
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        `- {name: c, cluster: {server: "http://127.0.0.1:${(server.address() as { port: number }).port}"}}`,
        "users:",
        "- {name: u, user: {token: stalled-cluster-token}}",
        "contexts:",
        "- {name: x, context: {cluster: c, user: u, namespace: default}}",
        "current-context: x",
        "",
      ].join("\n"),
    );
    const checkout = join(dir, "checkout");
    mkdirSync(checkout);
    writeFileSync(join(checkout, "README"), "a checkout\n");
    const serve = await startServeProcess([
      ...["--listen", "127.0.0.1:0", "--state-dir", join(dir, "state"), "--token-file", writeServeToken(dir, TOKEN)],
      ...["--kubeconfig", kubeconfig, "--transport", "api", "--skip-warm", "--checkout-root", dir],
      ...["--drain-timeout", "1s", "--drain-cleanup-timeout", "1s"],
    ]);
    try {
      const client = await createServeClient(serve.url, TOKEN);
      const submitted = await client.call(NSID.submitRun, {
        body: {
          workflow: { name: "ci.yml", text: "steps:\n  - name: main\n    command: 'true'\n" },
          checkout: { dir: checkout },
          runId: "held",
        },
      });
      assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
      const deadline = Date.now() + 20_000; // a busy machine may take seconds; without a Job call it never comes
      while (!held.some((req) => req.method === "POST" && req.url?.includes("/jobs")) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      assert.ok(held.length > 0, "the run asked the API server to create its Job");
      const sent = Date.now();
      serve.child.kill("SIGTERM");
      const { code, endedAt } = await serve.exited;
      assert.equal(code, 3, serve.output());
      assert.match(serve.output(), /gave up waiting for run held after 1s of clean-up: /);
      // The drain (1 s), the clean-up (1 s), the abandoned run's delete (bounded at 10 s), then the exit, not the
      // run's own calls timing out (about 30 s after the SIGTERM before the fix).
      const boundMs = 2_000 + ABANDON_DELETE_MS + 8_000;
      assert.ok(endedAt - sent < boundMs, `exited ${endedAt - sent} ms after SIGTERM (bound ${boundMs} ms)`);
    } finally {
      serve.child.kill("SIGKILL");
    }
  });
});
