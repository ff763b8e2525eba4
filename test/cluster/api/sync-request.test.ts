// Tests the crash path's blocking request against a server in another process (this one is blocked while it waits).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { requestSync } from "../../../src/cluster/api/sync-request.js";

const SERVER = `
const http = require("node:http");
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    if (req.url === "/slow") return;
    res.writeHead(req.url === "/missing" ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body }));
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(String(server.address().port) + "\\n"));
`;

describe("the crash path's blocking request", () => {
  let child: ChildProcess;
  let base = "";
  before(async () => {
    child = spawn(process.execPath, ["-e", SERVER], { stdio: ["ignore", "pipe", "inherit"] });
    const [chunk] = (await once(child.stdout!, "data")) as [Buffer];
    base = `http://127.0.0.1:${chunk.toString().trim()}`;
  });
  after(() => child.kill());

  it("sends the method, headers and body and returns the status and body", () => {
    const answer = requestSync(
      {
        url: `${base}/x`,
        method: "DELETE",
        headers: { Authorization: "Bearer t" },
        body: '{"a":1}',
        tls: { rejectUnauthorized: true },
      },
      60_000, // the server answers at once; a busy machine may take seconds to start the request's child
    );
    assert.ok("status" in answer, JSON.stringify(answer));
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.body), { method: "DELETE", auth: "Bearer t", body: '{"a":1}' });
    const missing = requestSync(
      { url: `${base}/missing`, method: "GET", headers: {}, tls: { rejectUnauthorized: true } },
      60_000, // the server answers at once; a busy machine may take seconds to start the request's child
    );
    assert.ok("status" in missing && missing.status === 404);
  });

  it("gives up after the timeout and says so", () => {
    const started = Date.now();
    const answer = requestSync(
      { url: `${base}/slow`, method: "GET", headers: {}, tls: { rejectUnauthorized: true } },
      500,
    );
    assert.deepEqual(answer, { error: "no answer within 500 ms" });
    assert.ok(Date.now() - started < 20_000, "gave up at the 500 ms timeout: /slow never answers"); // a bound a busy machine keeps
  });
});
