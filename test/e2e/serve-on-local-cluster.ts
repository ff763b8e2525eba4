// `serve` as its own process (the real CLI) against the local cluster, whose pods are podman containers: the suite each
// transport's file runs (serve-api-on-local-cluster.test.ts, serve-kubectl-on-local-cluster.test.ts), as two files so
// `node --test` runs them at once.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { startGitHttpServer } from "../support/git-http-server.js";
import { createServeClient, parsePrometheusText, type ServeClient } from "../support/serve-client.js";
import { readArchiveMembers } from "../support/tar-names.js";
import { startServeProcess, type ServeProcess } from "../support/serve-process.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-serve-token-of-16+";

const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const skipGitImage =
  skip ||
  (spawnSync("podman", ["run", "--rm", DEBIAN_IMAGE, "sh", "-c", "command -v git"], { stdio: "ignore" }).status === 0
    ? false
    : `the local ${DEBIAN_IMAGE} has no git (scripts/setup-containers.sh builds it with git)`);

/** The clone phase's end in a run's log.ndjson. */
function readCloneEnd(runDir: string): { ok: boolean; detail: string } {
  const lines = readFileSync(join(runDir, "log.ndjson"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { name?: string; status?: string; ok: boolean; detail: string });
  const end = lines.find((line) => line.name === "clone" && line.status === "end");
  assert.ok(end, "the log has a clone phase");
  return end;
}

/** The local cluster's pod network gateway: the pods are podman containers on podman-default-kube-network, which reach the host there. */
function readPodGateway(): string {
  return execFileSync(
    "podman",
    ["network", "inspect", "podman-default-kube-network", "--format", "{{range .Subnets}}{{.Gateway}}{{end}}"],
    { encoding: "utf8" },
  ).trim();
}

const workflow = (command: string, when = "") =>
  `${when}steps:\n  - name: main\n    command: ${JSON.stringify(command)}\n`;

/** serve with a short heartbeat, as these tests need. */
const startServe = (args: readonly string[], nodeArgs: readonly string[] = []): Promise<ServeProcess> =>
  startServeProcess(args, { KNOTLESS_HEARTBEAT_INTERVAL: "5s" }, nodeArgs);

/** The whole suite through `transport` (serve's default, the API in-process, or kubectl), on a local cluster of its own. */
export function describeServeOnLocalCluster(transport: "api" | "kubectl"): void {
  describe(
    `serve on the local cluster through the ${transport} transport`,
    { skip, concurrency: 1, timeout: 900_000 },
    () => {
      let cluster: LocalCluster;
      const dir = makeTestTempDir("serve-e2e-");
      const checkout = join(dir, "checkout");
      mkdirSync(checkout);
      writeFileSync(join(checkout, "README"), "a checkout\n");
      const tokenFile = join(dir, "token");
      writeFileSync(tokenFile, `${TOKEN}\n`);
      chmodSync(tokenFile, 0o600);
      const serveArgs = (stateDir: string, extra: readonly string[]) => [
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        stateDir,
        "--token-file",
        tokenFile,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--skip-warm",
        "--transport",
        transport,
        "--checkout-root",
        dir,
        "--allow-http-git",
        ...extra,
      ];

      before(async () => {
        cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
      });
      after(async () => {
        await cluster?.stop();
      });

      // Twice the cap proves the cap and the order through kubectl (its spawns are most of this file's CPU); the API
      // transport, in-process and cheap, queues 20.
      const many = transport === "api" ? 20 : 10;
      describe("with --max-runs 5", () => {
        let serve: ServeProcess;
        let client: ServeClient;
        const stateDir = join(dir, "state-5");
        before(async () => {
          serve = await startServe(serveArgs(stateDir, ["--max-runs", "5", "--metrics-without-token"]));
          client = await createServeClient(serve.url, TOKEN);
        });
        after(async () => {
          serve?.child.kill("SIGTERM");
          assert.equal((await serve?.exited)?.code, 0, serve?.output());
          await assertNothingLeft(cluster);
        });
        const submit = (runId: string, text: string, extra: Record<string, unknown> = {}) =>
          client.call(NSID.submitRun, {
            body: {
              workflow: { name: ".tangled/workflows/ci.yml", text },
              checkout: { dir: checkout },
              trigger: { event: "push", ref: "refs/heads/main", repo: "did:plc:e2e/repo" },
              runId,
              ...extra,
            },
          });

        it("refuses requests without the token or with a wrong one (401), /metrics aside with --metrics-without-token", async () => {
          assert.equal((await client.call(NSID.listRuns, { token: null })).status, 401);
          assert.equal((await client.call(NSID.listRuns, { token: "wrong" })).status, 401);
          await assert.rejects(
            client.followWs("/events", { token: "wrong" }),
            (e: { statusCode?: number }) => e.statusCode === 401,
          );
          assert.equal((await client.fetch("/metrics", { token: null })).status, 200);
        });

        it("answers a bad workflow with 400 at file:line:column, queues nothing and calls no cluster", async () => {
          const bad = await submit("bad", "steps:\n  - name: x\n    command: [1, 2]\n");
          assert.equal(bad.status, 400);
          assert.equal(bad.body.error, "InvalidWorkflow");
          assert.match(bad.body.message, /\.tangled\/workflows\/ci\.yml:3:\d+/);
          assert.deepEqual((await client.call(NSID.listRuns, {})).body.runs, []);
          assert.deepEqual(cluster.objects("jobs.batch"), []);
        });

        it(`runs ${many} runs submitted at once with never more than 5 Jobs at a time, all succeeding, started in submission order`, async () => {
          const ids = Array.from({ length: many }, (_, i) => `many-${String(i).padStart(2, "0")}`);
          let most = 0;
          const sampler = setInterval(() => (most = Math.max(most, cluster.objects("jobs.batch").length)), 50);
          try {
            for (const id of ids)
              assert.equal(
                (await submit(id, workflow(`echo run $KNOTLESS_RUN_ID; echo out > /outputs/$KNOTLESS_RUN_ID.txt`)))
                  .status,
                200,
              );
            await waitUntil(
              `${many} runs over`,
              async () =>
                (await client.call(NSID.listRuns, { params: { status: "success", limit: "100" } })).body.runs.length ===
                many,
              600_000,
            );
          } finally {
            clearInterval(sampler);
          }
          assert.ok(most <= 5, `${most} Jobs at once`);
          assert.ok(most >= 2, "the runs did overlap");
          const events = await client.followNdjson("/events?cursor=0", {
            until: (lines) => lines.filter((l) => JSON.parse(l).status === "success").length === many,
          });
          const startOrder = events
            .map((l) => JSON.parse(l))
            .filter((e) => e.status === "running")
            .map((e) => e.runId);
          assert.deepEqual(startOrder, ids);
        });

        it("gives two clients of a finished run's log, over WebSocket and NDJSON, exactly its log.ndjson", async () => {
          const file = readFileSync(join(stateDir, "runs", "many-00", "log.ndjson"), "utf8")
            .trim()
            .split("\n");
          assert.deepEqual((await client.followWs("/logs/many-00")).frames, file);
          assert.deepEqual(await client.followNdjson("/logs/many-00"), file);
          assert.ok(file.some((line) => JSON.parse(line).content === "run many-00\n"));
        });

        it("follows a live run's log from two clients, one joining after the end, each getting its log.ndjson", async () => {
          await submit("live", workflow("echo first; sleep 2; echo second"));
          const early = client.followWs("/logs/live");
          const { frames } = await early;
          const late = await client.followNdjson("/logs/live");
          const file = readFileSync(join(stateDir, "runs", "live", "log.ndjson"), "utf8")
            .trim()
            .split("\n");
          assert.deepEqual(frames, file);
          assert.deepEqual(late, file);
        });

        it("returns the run's outputs as a tar", async () => {
          const res = await client.fetch(`/xrpc/${NSID.getOutputs}?runId=many-03`);
          assert.equal(res.status, 200);
          const members = await readArchiveMembers(Buffer.from(await res.arrayBuffer()));
          assert.deepEqual(
            members.filter((m) => m.type === "file").map((m) => [m.name, m.content.toString()]),
            [["outputs/many-03.txt", "out\n"]],
          );
        });

        it("records a failing run as failed, a non-matching one as skipped, and answers a second submit of a runId with the same run", async () => {
          await submit("fails", workflow("echo bad; exit 3"));
          assert.deepEqual(
            (await submit("skips", workflow("true", "when:\n  - event: push\n    branch: release\n"))).body,
            { runId: "skips", status: "skipped" },
          );
          await waitUntil(
            "the failing run over",
            async () => (await client.call(NSID.getRun, { params: { runId: "fails" } })).body.status === "failed",
            120_000,
          );
          const failed = await client.call(NSID.getRun, { params: { runId: "fails" } });
          assert.equal(failed.body.result.exitCode, 3); // the failed step's
          assert.equal(failed.body.result.steps[0].exitCode, 3);
          assert.deepEqual((await submit("fails", workflow("true"))).body, { runId: "fails", status: "failed" });
          const events = (
            await client.followNdjson("/events?cursor=0", {
              until: (lines) => lines.some((l) => JSON.parse(l).runId === "fails" && JSON.parse(l).status === "failed"),
            })
          ).map((l) => JSON.parse(l));
          assert.equal(events.filter((e) => e.runId === "fails" && e.status === "running").length, 1);
          assert.equal((await client.call(NSID.getRun, { params: { runId: "skips" } })).body.result.status, "skipped");
        });

        it("clones a git checkout at the asked commit on the host when the image (busybox) has no git, and runs on it", async () => {
          const repo = join(dir, "repo");
          mkdirSync(repo);
          const git = (...args: string[]) =>
            execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], {
              cwd: repo,
              encoding: "utf8",
            }).trim();
          git("init", "-q");
          writeFileSync(join(repo, "version.txt"), "v1\n");
          git("add", "version.txt");
          git("commit", "-q", "-m", "v1");
          const v1 = git("rev-parse", "HEAD");
          writeFileSync(join(repo, "version.txt"), "v2\n");
          git("commit", "-q", "-am", "v2");
          const server = await startGitHttpServer(dir);
          const res = await client.call(NSID.submitRun, {
            body: {
              workflow: { name: "ci.yml", text: workflow("cp version.txt /outputs/seen.txt") },
              checkout: { git: { url: `${server.url}/repo`, sha: v1 } },
              runId: "cloned",
            },
          });
          assert.equal(res.status, 200);
          await waitUntil(
            "the cloned run over",
            async () => (await client.call(NSID.getRun, { params: { runId: "cloned" } })).body.status !== "running",
            120_000,
          );
          assert.equal((await client.call(NSID.getRun, { params: { runId: "cloned" } })).body.status, "success");
          assert.equal(readFileSync(join(stateDir, "runs", "cloned", "outputs", "seen.txt"), "utf8"), "v1\n");
          assert.match(
            readCloneEnd(join(stateDir, "runs", "cloned")).detail,
            /^cloned http:\/\/.* at [0-9a-f]{40} on the host, the image having no git \(depth 1, with submodules\)$/,
          );
          await server.stop();
        });

        it(
          "clones a git checkout in the pod when the image (Debian) has git, Tangled's way, from a git HTTP server the pod reaches",
          { skip: skipGitImage },
          async () => {
            const repo = join(dir, "served", "repo.git");
            mkdirSync(repo, { recursive: true });
            const git = (...args: string[]) =>
              execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], {
                cwd: repo,
                encoding: "utf8",
              }).trim();
            git("init", "-q");
            for (const version of ["v1", "v2", "v3"]) {
              writeFileSync(join(repo, "version.txt"), `${version}\n`);
              git("add", "version.txt");
              git("commit", "-q", "-m", version);
            }
            const v2 = git("rev-parse", "HEAD~1");
            const daemon = await startGitHttpServer(join(dir, "served"), readPodGateway());
            try {
              const url = `${daemon.url}/repo.git`;
              const command =
                "git -C /work rev-parse HEAD > /outputs/seen.txt; git -C /work rev-list --count HEAD >> /outputs/seen.txt; cat version.txt >> /outputs/seen.txt";
              const res = await client.call(NSID.submitRun, {
                body: {
                  workflow: { name: "ci.yml", text: workflow(command) },
                  checkout: { git: { url, sha: v2, depth: 2 } },
                  overrides: { image: DEBIAN_IMAGE },
                  runId: "cloned-in-pod",
                },
              });
              assert.equal(res.status, 200);
              await waitUntil(
                "the run cloned in the pod over",
                async () =>
                  (await client.call(NSID.getRun, { params: { runId: "cloned-in-pod" } })).body.status !== "running",
                180_000,
              );
              assert.equal(
                (await client.call(NSID.getRun, { params: { runId: "cloned-in-pod" } })).body.status,
                "success",
                serve.output(),
              );
              assert.equal(
                readFileSync(join(stateDir, "runs", "cloned-in-pod", "outputs", "seen.txt"), "utf8"),
                `${v2}\n2\nv2\n`,
              );
              assert.equal(
                readCloneEnd(join(stateDir, "runs", "cloned-in-pod")).detail,
                `cloned ${url} at ${v2} in the pod (depth 2, with submodules)`,
              ); // Tangled's default: submodules unless the workflow says no
              const gone = await client.call(NSID.submitRun, {
                body: {
                  workflow: { name: "ci.yml", text: workflow("true") },
                  checkout: { git: { url, sha: "0".repeat(40) } },
                  overrides: { image: DEBIAN_IMAGE },
                  runId: "clone-fails-in-pod",
                },
              });
              assert.equal(gone.status, 200);
              await waitUntil(
                "the failing clone over",
                async () =>
                  (await client.call(NSID.getRun, { params: { runId: "clone-fails-in-pod" } })).body.status !==
                  "running",
                180_000,
              );
              const failed = await client.call(NSID.getRun, { params: { runId: "clone-fails-in-pod" } });
              assert.equal(failed.body.status, "failed");
              assert.equal(failed.body.result.errorReason, "checkout-failed");
              assert.match(failed.body.result.error, /^git fetch failed in the pod \(exit 128\)/);
              assert.equal(failed.body.result.steps[0].status, "skipped");
            } finally {
              await daemon.stop();
            }
          },
        );

        it("resumes events from a cursor with nothing missed or repeated", async () => {
          const all = (
            await client.followNdjson("/events?cursor=0", {
              until: (lines) => lines.some((l) => JSON.parse(l).runId === "fails" && JSON.parse(l).status === "failed"),
            })
          ).map((l) => JSON.parse(l));
          const middle = all[Math.floor(all.length / 2)].cursor;
          const rest = (
            await client.followWs(`/events?cursor=${middle}`, {
              until: (frames) => JSON.parse(frames.at(-1)!).cursor === all.at(-1).cursor,
            })
          ).frames.map((f) => JSON.parse(f));
          assert.deepEqual(
            [...all.filter((e) => e.cursor <= middle), ...rest].map((e) => e.cursor),
            all.map((e) => e.cursor),
          );
        });

        it("serves /metrics that parse as Prometheus text, with the finished runs counted", async () => {
          const samples = parsePrometheusText(await (await client.fetch("/metrics")).text());
          assert.ok((samples.get('knotless_runner_runs{status="success"}') ?? 0) >= many + 1);
          const failed = (await client.call(NSID.listRuns, { params: { status: "failed" } })).body.runs.length;
          assert.ok(failed >= 1);
          assert.equal(samples.get('knotless_runner_runs{status="failed"}'), failed);
          assert.ok((samples.get("knotless_runner_pod_wait_seconds_count") ?? 0) >= many + 1);
          assert.ok((samples.get('knotless_runner_bytes_moved_total{direction="download"}') ?? 0) > 0);
          // Each run's upload is at least its archive's end-of-archive blocks (1 KiB), and the checkout's README.
          assert.ok((samples.get('knotless_runner_bytes_moved_total{direction="upload"}') ?? 0) >= (many + 1) * 1024);
        });
      });

      describe("with --max-runs 1", () => {
        it("cancels a pending run before it starts and a running one, then drains on SIGTERM: the running run finishes, the pending one is cancelled", async () => {
          const stateDir = join(dir, "state-1");
          const serve = await startServe(serveArgs(stateDir, ["--max-runs", "1", "--drain-timeout", "60s"]));
          const client = await createServeClient(serve.url, TOKEN);
          const submit = (runId: string, command: string) =>
            client.call(NSID.submitRun, {
              body: { workflow: { name: "ci.yml", text: workflow(command) }, checkout: { dir: checkout }, runId },
            });
          await submit("long", "echo started; sleep 120");
          assert.deepEqual((await submit("waits", "true")).body, { runId: "waits", status: "pending" });
          assert.deepEqual((await client.call(NSID.cancelRun, { body: { runId: "waits" } })).body, {
            runId: "waits",
            status: "cancelled",
          });
          await client.followWs("/logs/long", {
            until: (frames) => frames.some((f) => JSON.parse(f).content === "started\n"),
          });
          await client.call(NSID.cancelRun, { body: { runId: "long" } });
          await waitUntil(
            "the long run cancelled",
            async () => (await client.call(NSID.getRun, { params: { runId: "long" } })).body.status === "cancelled",
            120_000,
          );
          assert.equal((await client.call(NSID.getRun, { params: { runId: "waits" } })).body.startedAt, undefined);
          await assertNothingLeft(cluster);

          await submit("drained", "sleep 3; echo finished");
          await submit("never", "true");
          await client.followWs("/logs/drained", {
            until: (frames) =>
              frames.some((f) => JSON.parse(f).status === "start" && JSON.parse(f).stepKind === "user"),
          });
          serve.child.kill("SIGTERM");
          await waitUntil(
            "submits refused",
            async () => {
              const refused = await submit("late", "true").catch(() => ({ status: 0, body: {} }));
              return refused.status === 503 || refused.status === 0;
            },
            10_000,
          );
          assert.equal((await serve.exited).code, 0, serve.output());
          const { RunStore } = await import("../../src/serve/run-store.js");
          const store = new RunStore(stateDir);
          assert.equal(store.getRun("drained")?.status, "success");
          assert.match(
            store.getRun("drained")?.pod ?? "",
            /^knotless-run-drained-/,
            "the pod is recorded for a restarted service",
          );
          assert.equal(store.getRun("drained")?.step, 0);
          assert.equal(store.getRun("never")?.status, "cancelled");
          store.close();
          await assertNothingLeft(cluster);
        });

        it("exits at once on a second SIGTERM, the running run's Job deleted and the run recorded cancelled, leaving nothing in the cluster", async () => {
          const stateDir = join(dir, "state-2");
          const serve = await startServe(serveArgs(stateDir, ["--max-runs", "1", "--drain-timeout", "10m"]));
          const client = await createServeClient(serve.url, TOKEN);
          await client.call(NSID.submitRun, {
            body: {
              workflow: { name: "ci.yml", text: workflow("echo started; sleep 300") },
              checkout: { dir: checkout },
              runId: "stuck",
            },
          });
          await client.followWs("/logs/stuck", {
            until: (frames) => frames.some((f) => JSON.parse(f).content === "started\n"),
          });
          serve.child.kill("SIGTERM");
          await waitUntil("draining said", () => /draining/.test(serve.output()), 10_000);
          const second = Date.now();
          serve.child.kill("SIGTERM");
          assert.equal((await serve.exited).code, 130, serve.output());
          assert.ok(Date.now() - second < 5000, `exited ${Date.now() - second} ms after the second SIGTERM`);
          assert.match(serve.output(), /SIGTERM again: abandoned run stuck: /);
          const { RunStore } = await import("../../src/serve/run-store.js");
          const store = new RunStore(stateDir);
          assert.equal(store.getRun("stuck")?.status, "cancelled");
          store.close();
          await assertNothingLeft(cluster);
        });

        it("ends a run whose /outputs exceed --max-output-bytes as success, the blob refused, and stops cleanly", async () => {
          const stateDir = join(dir, "state-over-limit");
          const serve = await startServe(serveArgs(stateDir, ["--max-runs", "1", "--max-output-bytes", "1Mi"]));
          const client = await createServeClient(serve.url, TOKEN);
          await client.call(NSID.submitRun, {
            body: {
              workflow: { name: "ci.yml", text: workflow("head -c 3000000 /dev/urandom > /outputs/blob.bin") },
              checkout: { dir: checkout },
              runId: "over-limit",
            },
          });
          await waitUntil(
            "the over-limit run over",
            async () =>
              ["success", "failed", "cancelled"].includes(
                (await client.call(NSID.getRun, { params: { runId: "over-limit" } })).body.status,
              ),
            60_000,
          );
          const run = (await client.call(NSID.getRun, { params: { runId: "over-limit" } })).body;
          assert.equal(run.status, "success", JSON.stringify(run));
          assert.ok(
            run.result.refusedOutputs.some((r: { path: string }) => r.path.endsWith("blob.bin")),
            JSON.stringify(run.result.refusedOutputs),
          );
          serve.child.kill("SIGTERM");
          assert.equal((await serve.exited).code, 0, serve.output());
          await assertNothingLeft(cluster);
        });

        it("refuses to start with a token file that group or others can read (exit 2)", async () => {
          const loose = join(dir, "loose-token");
          writeFileSync(loose, TOKEN);
          chmodSync(loose, 0o644);
          await assert.rejects(
            startServe(["--state-dir", join(dir, "state-3"), "--token-file", loose]),
            /exited 2 .*open to group or others/s,
          );
        });
      });
    },
  );
}
