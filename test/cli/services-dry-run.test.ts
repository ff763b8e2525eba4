// The CLI on a workflow with services: the dry run shows them; a bad service is refused with its position, exit 2, no kubectl call.
import assert from "node:assert/strict";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { makeWorkspace, runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const SERVICES = [
  "services:",
  "  - name: postgres",
  "    image: localhost/knotless-postgres:bookworm",
  "    ports: [5432]",
  "    readiness: {tcp: 5432, timeout: 90s}",
  "  - name: cache",
  "    image: redis:7",
  "    readiness: {exec: [redis-cli, ping]}",
];

describe("run with workflow services", () => {
  it("prints each service in the dry run, with its ports, readiness and timeout, and the sidecar in the manifest", async () => {
    const ws = makeWorkspace("");
    const workflow = join(ws.out, "..", "services.yml");
    writeFileSync(
      workflow,
      [...SERVICES, "steps:", "  - {name: test, command: psql -h 127.0.0.1 -U postgres -c 'select 1'}", ""].join("\n"),
    );
    const run = await runCliInProcess([
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      ws.out,
      "--namespace",
      "ci",
      "--dry-run",
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^# {3}service postgres: localhost\/knotless-postgres:bookworm, localhost:5432; ready when tcp 5432 accepts, within 1m30s; a native sidecar on Kubernetes >= 1\.29, else a container beside the steps$/m,
    );
    assert.match(run.stdout, /^# {3}service cache: redis:7; ready when `redis-cli ping` exits 0, within 1m00s;/m);
    assert.match(run.stdout, /^\s+initContainers:$/m);
    assert.match(run.stdout, /^\s+restartPolicy: Always$/m);
  });

  it("refuses a bad service at its file:line:column with exit 2, calling no kubectl", async () => {
    const bin = makeTestTempDir("knotless-services-bin-");
    const marker = join(bin, "called");
    writeFileSync(join(bin, "kubectl"), `#!/bin/sh\necho "$@" >> ${marker}\nexit 1\n`);
    chmodSync(join(bin, "kubectl"), 0o755);
    const ws = makeWorkspace("");
    const workflow = join(ws.out, "..", "bad-services.yml");
    writeFileSync(
      workflow,
      [
        "services:",
        "  - {name: Postgres, image: postgres:16, ports: [5432], readiness: {tcp: 5433}}",
        "steps:",
        "  - {name: test, command: 'true'}",
        "",
      ].join("\n"),
    );
    const run = await runCliInProcess([
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      ws.out,
      "--namespace",
      "ci",
      "--kubectl",
      join(bin, "kubectl"),
    ]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /bad-services\.yml:2:12: services\[0\]\.name: expected a name of lowercase letters.*\n.*bad-services\.yml:2:74: services\[0\]\.readiness\.tcp: the port 5433 is not one of the service.s ports/,
    );
    assert.equal(existsSync(marker), false, "no kubectl call");
  });
});
