import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { StepOutcome } from "../../src/executor/executor.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { startService, type StartedService } from "../../src/serve/start-service.js";
import { readArchiveMembers } from "../support/tar-names.js";
import { createServeClient, parsePrometheusText, type ServeClient } from "../support/serve-client.js";
import { EMPTY_REPORT, ScriptedExecutor, untilAborted } from "../support/scripted-executor.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "t0ken-for-tests";
const WORKFLOW = [
  "steps:",
  "  - name: hello",
  "    command: echo hello",
  "  - name: wait",
  "    command: sleep 1",
  "",
].join("\n");

describe("serve over HTTP (scripted executor)", { timeout: 60_000 }, () => {
  const dir = makeTestTempDir("serve-http-");
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  let started: StartedService;
  let client: ServeClient;
  /** Releases the second step of a run. */
  const releases = new Map<string, () => void>();
  const release = async (runId: string): Promise<void> => {
    for (let i = 0; i < 400 && !releases.has(runId); i++) await new Promise((r) => setTimeout(r, 5));
    releases.get(runId)!();
  };

  before(async () => {
    started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(dir, "state"),
        token: TOKEN,
        metricsWithoutToken: false,
        limits: { maxRuns: 2, maxQueued: 10, maxWorkflowBytes: 10_000, maxSecrets: 4, maxSecretBytes: 1000 },
        maxBodyBytes: 64 * 1024,
        keepRunsMs: 3_600_000,
        gcIntervalMs: 3_600_000,
        gcStaleAfterMs: 120_000,
        defaults: {
          target: { namespace: "ci" },
          podTimeoutMs: 1000,
          maxOutputBytes: 1 << 20,
          maxLogBytes: 1 << 20,
          checkoutRoot: dir,
        },
        transport: {
          setting: { target: { namespace: "ci" }, kubectlPath: "/nonexistent/kubectl", transport: "kubectl" },
          env: {},
        },
      },
      {
        warn: () => undefined,
        createExecutor: (ctx) =>
          new ScriptedExecutor(ctx, {
            runStep: async (index, _deadline, c) => {
              c.emit({ kind: "step-output", index, stream: "stdout", text: `line ${index} of ${c.settings.runId}\n` });
              if (index === 1)
                await Promise.race([
                  new Promise<void>((resolve) => releases.set(c.settings.runId, resolve)),
                  untilAborted(c.signal),
                ]);
              return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
            },
            copyOut: async (c) => {
              mkdirSync(join(c.settings.outDir, "outputs"), { recursive: true });
              writeFileSync(join(c.settings.outDir, "outputs", "report.txt"), "made by the run\n");
              return { ...EMPTY_REPORT, files: [{ path: "report.txt", size: 16, sha256: "0".repeat(64) }], bytes: 16 };
            },
          }),
      },
    );
    client = await createServeClient(started.url, TOKEN);
  });
  after(async () => {
    await started?.stop(1000, AbortSignal.abort());
  });

  const submit = (runId: string) =>
    client.call(NSID.submitRun, {
      body: { workflow: { name: "ci.yml", text: WORKFLOW }, checkout: { dir: checkout }, runId },
    });

  it("refuses every endpoint without the token, or with a wrong one, with 401", async () => {
    for (const token of [null, "wrong"]) {
      assert.equal((await client.call(NSID.listRuns, { token })).status, 401);
      assert.equal((await client.fetch("/metrics", { token })).status, 401);
      assert.equal((await client.fetch("/events", { token, headers: { Accept: "application/x-ndjson" } })).status, 401);
      await assert.rejects(client.followWs("/events", { token }), (e: { statusCode?: number }) => e.statusCode === 401);
    }
  });

  it("answers a stream request for an unknown run with 400 RunNotFound, a bad path encoding with 400, and a plain GET with 406", async () => {
    const ndjson = { headers: { Accept: "application/x-ndjson" } };
    assert.equal(((await (await client.fetch("/logs/nope", ndjson)).json()) as { error: string }).error, "RunNotFound");
    assert.equal((await client.fetch("/logs/%E0%A4%A", ndjson)).status, 400);
    assert.equal((await client.fetch("/events")).status, 406);
    await assert.rejects(client.followWs("/logs/nope"), (e: { statusCode?: number }) => e.statusCode === 400);
  });

  it("answers a bad workflow with 400 InvalidWorkflow at file:line:column, and records nothing", async () => {
    const bad = await client.call(NSID.submitRun, {
      body: { workflow: { name: "ci.yml", text: "steps:\n  - nme: x\n" }, checkout: { dir: checkout }, runId: "bad" },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, "InvalidWorkflow");
    assert.match(bad.body.message, /ci\.yml:2:\d+/);
    assert.equal((await client.call(NSID.getRun, { params: { runId: "bad" } })).body.error, "RunNotFound");
  });

  it("runs a submitted workflow, streams its log to a WebSocket client and an NDJSON client, and a late client gets the same lines", async () => {
    assert.deepEqual((await submit("r1")).body, { runId: "r1", status: "running" });
    const ws = client.followWs("/logs/r1");
    const ndjson = client.followNdjson("/logs/r1");
    await release("r1");
    const [fromWs, fromNdjson] = await Promise.all([ws, ndjson]);
    assert.equal(fromWs.code, 1000);
    const file = readFileSync(join(dir, "state", "runs", "r1", "log.ndjson"), "utf8")
      .trim()
      .split("\n");
    assert.deepEqual(fromWs.frames, file);
    assert.deepEqual(fromNdjson, file);
    assert.deepEqual((await client.followWs("/logs/r1")).frames, file);
    for (const line of file) client.lexicons.def("logLine", JSON.parse(line));
    const run = await client.call(NSID.getRun, { params: { runId: "r1" } });
    assert.equal(run.body.status, "success");
    assert.equal(run.body.result.status, "success");
  });

  it("returns the run's outputs as a tar, and 400 for an artifact it does not have", async () => {
    const res = await client.fetch(`/xrpc/${NSID.getOutputs}?runId=r1`);
    assert.equal(res.headers.get("content-type"), "application/x-tar");
    const members = await readArchiveMembers(Buffer.from(await res.arrayBuffer()));
    assert.deepEqual(
      members.filter((m) => m.type === "file").map((m) => [m.name, m.content.toString()]),
      [["outputs/report.txt", "made by the run\n"]],
    );
    assert.equal(
      (await client.call(NSID.getOutputs, { params: { runId: "r1", artifact: "nope" } })).body.error,
      "ArtifactNotFound",
    );
  });

  it("streams events from a cursor over both transports, with nothing missed or repeated", async () => {
    const all = (
      await client.followNdjson("/events?cursor=0", {
        until: (lines) => lines.some((l) => JSON.parse(l).status === "success"),
      })
    ).map((l) => JSON.parse(l));
    for (const event of all) client.lexicons.def("statusEvent", event);
    await submit("r2");
    const cursor = all.at(-1).cursor;
    const live = client.followWs(`/events?cursor=${cursor}`, {
      until: (frames) => frames.some((f) => JSON.parse(f).status === "success"),
    });
    await release("r2");
    const after = (await live).frames.map((f) => JSON.parse(f));
    assert.deepEqual(
      after.map((e) => [e.runId, e.status]),
      [
        ["r2", "pending"],
        ["r2", "running"],
        ["r2", "success"],
      ],
    );
    assert.ok(after.every((e) => e.cursor > cursor));
  });

  it("answers /events past the latest cursor with 400 FutureCursor and a cursor of another epoch with 400 EpochMismatch, before streaming; every event frame carries the epoch", async () => {
    const ndjson = { headers: { Accept: "application/x-ndjson" } };
    const future = await client.fetch("/events?cursor=999999", ndjson);
    assert.equal(future.status, 400);
    const futureBody = (await future.json()) as { error: string };
    assert.equal(futureBody.error, "FutureCursor");
    client.lexicons.def("streamRefused", futureBody);
    assert.ok(client.lexicons.streamErrors("streamRefused").includes("FutureCursor"), "declared in defs#streamRefused");
    await assert.rejects(
      client.followWs("/events?cursor=999999"),
      (e: { statusCode?: number }) => e.statusCode === 400,
    );
    const frames = (await client.followWs("/events?cursor=0", { until: (f) => f.length >= 2 })).frames.map(
      (f) => JSON.parse(f) as { epoch?: string },
    );
    const epoch = frames[0]!.epoch!;
    assert.match(epoch, /^[A-Za-z0-9_-]{16}$/);
    assert.ok(frames.every((f) => f.epoch === epoch));
    for (const frame of frames) client.lexicons.def("statusEvent", frame);
    const other = await client.fetch("/events?cursor=1&epoch=another-epoch", ndjson);
    assert.equal(other.status, 400);
    const otherBody = (await other.json()) as { error: string };
    assert.equal(otherBody.error, "EpochMismatch");
    assert.ok(
      client.lexicons.streamErrors("streamRefused").includes("EpochMismatch"),
      "declared in defs#streamRefused",
    );
    await assert.rejects(
      client.followWs("/events?cursor=0&epoch=another-epoch"),
      (e: { statusCode?: number }) => e.statusCode === 400,
    );
    const resumed = await client.followNdjson(`/events?cursor=1&epoch=${epoch}`, {
      until: (lines) => lines.length >= 1,
    });
    assert.equal((JSON.parse(resumed[0]!) as { cursor: number; epoch: string }).cursor, 2);
  });

  it("cancels a running run over XRPC and lists runs newest first", async () => {
    await submit("r3");
    assert.equal((await client.call(NSID.cancelRun, { body: { runId: "r3" } })).status, 200);
    await started.service.whenIdle();
    assert.equal((await client.call(NSID.getRun, { params: { runId: "r3" } })).body.status, "cancelled");
    const list = await client.call(NSID.listRuns, { params: { limit: "2" } });
    assert.deepEqual(
      list.body.runs.map((r: { runId: string }) => r.runId),
      ["r3", "r2"],
    );
    const next = await client.call(NSID.listRuns, { params: { limit: "2", cursor: list.body.cursor } });
    assert.deepEqual(
      next.body.runs.map((r: { runId: string }) => r.runId),
      ["r1"],
    );
  });

  it("serves /metrics in Prometheus' text format with runs by status, the queue and process memory", async () => {
    const text = await (await client.fetch("/metrics")).text();
    const samples = parsePrometheusText(text);
    assert.equal(samples.get('knotless_runner_runs{status="success"}'), 2);
    assert.equal(samples.get('knotless_runner_runs{status="cancelled"}'), 1);
    assert.equal(samples.get("knotless_runner_queue_length"), 0);
    assert.ok((samples.get("process_resident_memory_bytes") ?? 0) > 0);
    assert.ok(samples.get('knotless_runner_run_duration_seconds_count{status="success"}') === 2);
  });
});
