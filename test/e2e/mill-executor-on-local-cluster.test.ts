// The `executor` command as its own process, placed on by a stand-in mill, running Tangled workflows as Jobs on the local cluster (pods are podman containers), cloning from a knot the pods reach.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { buildJobName } from "../../src/manifests/names.js";
import { buildLeaseRunId, MILL_CACHES_OFF } from "../../src/mill/launch-lease.js";
import { REJECT_CLASS, TERMINAL_STATUS } from "../../src/mill/mill-messages.js";
import { startGitHttpServer } from "../support/git-http-server.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, readPodGateway } from "../support/local-cluster-e2e.js";
import { BUSYBOX, offer, SHA, startExecutor, step, type ExecutorProcess } from "../support/mill-e2e.js";
import { StandInMill } from "../support/stand-in-mill.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-mill-token-of-the-mill";
/** An image with git: the clone happens in the pod. */
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const SECRET = "hunter2-mill-secret";
/** Every file under `dir`, as text. */
function readTree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isFile() ? [readFileSync(path, "latin1")] : [];
  });
}

describe("the mill executor on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  let mill: StandInMill;
  let executor: ExecutorProcess;
  const dir = makeTestTempDir("mill-e2e-");
  const stateDir = join(dir, "state");
  const storeDir = join(dir, "store");
  const tokenFile = join(dir, "token");
  const configFile = join(dir, "config.yml");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  writeFileSync(
    configFile,
    [
      "engines:",
      "  microvm:",
      "    images:",
      `      alpine: ${BUSYBOX}`,
      `      debian: ${DEBIAN_IMAGE}`,
      "    defaultImage: alpine",
      "",
    ].join("\n"),
  );
  const args = () => [
    "--mill",
    mill.url,
    "--insecure-mill",
    "--token-file",
    tokenFile,
    "--state-dir",
    stateDir,
    "--log-store",
    storeDir,
    "--labels",
    "k8s",
    "--max-runs",
    "2",
    "--config",
    configFile,
    "--kubeconfig",
    cluster.kubeconfigPath,
    "--kubectl",
    KUBECTL,
    "--skip-warm",
  ];
  const connected = (connections: number) =>
    mill.waitFor(
      () => mill.connections >= connections && mill.connected && mill.messages("nodeSnapshot").length > 0,
      30_000,
      "the executor's session",
    );

  before(async () => {
    [cluster, mill] = await Promise.all([
      startLocalCluster({ imageBackOffSeconds: 1 }),
      StandInMill.start({ token: TOKEN }),
    ]);
    executor = await startExecutor(args());
    await connected(1);
  });
  after(async () => {
    if (executor) {
      executor.child.kill("SIGTERM");
      assert.equal(await executor.exited, 0, executor.output());
    }
    await mill?.close();
    if (cluster) await assertNothingLeft(cluster);
    await cluster?.stop();
  });

  it("runs a push pipeline's workflow: RUNNING then SUCCESS, the artifact's hash that of the stored log, Tangled's variables set, the secret masked everywhere and in no file", async () => {
    const steps =
      step("greet", 'echo "repo=$TANGLED_REPO_NAME sha=$TANGLED_SHA ci=$CI"') +
      step("secret", 'echo "token=$DEPLOY_TOKEN"; printf %s "$DEPLOY_TOKEN" | base64');
    assert.equal((await mill.reserve(offer("3kxmill-1", steps))).accepted, true);
    assert.equal(await mill.commit("3kxmill-1", [{ key: "DEPLOY_TOKEN", value: SECRET }]), "committed");
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxmill-1"), 300_000, "the terminal");
    assert.deepEqual(mill.statuses.get("3kxmill-1"), ["running", "success"], executor.output());
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    const stored = readFileSync(join(storeDir, terminal.logArtifact!.ref));
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    const storedLines = stored
      .toString("utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(mill.liveLines("3kxmill-1"), storedLines, "every stored line went out live, in order");
    const text = stored.toString("utf8");
    assert.match(text, new RegExp(`repo=core sha=${SHA} ci=true`));
    assert.ok(
      storedLines.some(
        (line) =>
          line.kind === "control" &&
          line.step_status === "start" &&
          line.step_id === 0 &&
          line.step_kind === 1 &&
          line.step_command !== undefined,
      ),
    );
    assert.ok(
      storedLines.some((line) => line.kind === "control" && line.step_id === -1),
      "setup work is a system step",
    );
    assert.match(text, /token=\*\*\*/);
    for (const form of [SECRET, Buffer.from(SECRET).toString("base64")]) {
      assert.ok(!text.includes(form), `the stored log holds ${form}`);
      assert.ok(!readTree(stateDir).some((file) => file.includes(form)), `a file of the state directory holds ${form}`);
    }
  });

  it("reports a failing step FAILED with its exit code", async () => {
    assert.equal((await mill.reserve(offer("3kxmill-2", step("fails", "echo about to fail; exit 3")))).accepted, true);
    assert.equal(await mill.commit("3kxmill-2"), "committed");
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxmill-2"), 300_000, "the terminal");
    assert.deepEqual([terminal.status, terminal.exitCode], [TERMINAL_STATUS.failed, 3], terminal.error);
  });

  it("clones the record's commit from the knot in the pod at the workflow's depth, with its tags, and says its caches are not kept", async () => {
    // A knot's repository, served by git's smart HTTP on the pod network's gateway: four commits, the third pushed.
    const repoDid = "did:plc:e2eclone";
    const repo = join(dir, "knot", repoDid);
    mkdirSync(repo, { recursive: true });
    const git = (...gitArgs: string[]) =>
      execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...gitArgs], {
        cwd: repo,
        encoding: "utf8",
      }).trim();
    git("init", "-q");
    for (const version of ["v1", "v2", "v3", "v4"]) {
      writeFileSync(join(repo, "version.txt"), `${version}\n`);
      git("add", "version.txt");
      git("commit", "-q", "-m", version);
    }
    git("tag", "v0.1", "HEAD~3");
    git("tag", "-a", "-m", "release", "v0.4", "HEAD");
    const pushed = git("rev-parse", "HEAD~1");
    const knot = await startGitHttpServer(join(dir, "knot"), readPodGateway());
    try {
      const raw =
        `engine: microvm\nimage: debian\ncaches:\n  - key: deps\n    paths: [/work/.deps]\nsteps:\n` +
        step(
          "look",
          'echo "head=$(git -C /work rev-parse HEAD) count=$(git -C /work rev-list --count HEAD) version=$(cat /work/version.txt) tags=$(git -C /work tag --list | tr "\\n" ,)"',
        );
      const pipeline = JSON.stringify({
        triggerMetadata: {
          kind: "push",
          repo: { knot: knot.url, did: "did:plc:owner", repoDid, repo: "core", defaultBranch: "main" },
          push: { ref: "refs/heads/main", oldSha: "0".repeat(40), newSha: pushed },
        },
        workflows: [],
      });
      const seat = {
        leaseId: "3kxclone-1",
        targetEngine: "microvm",
        rawPipelineJson: pipeline,
        rawWorkflowJson: JSON.stringify({
          name: "clone.yml",
          engine: "microvm",
          clone: { skip: false, depth: 2, submodules: false, tags: true },
          raw,
        }),
        knot: "knot.example.org",
        rkey: "3kxclone",
      };
      const reserved = await mill.reserve(seat);
      assert.equal(reserved.accepted, true, reserved.rejectReason);
      assert.equal(await mill.commit("3kxclone-1"), "committed");
      const terminal = await mill.waitFor(() => mill.terminals.get("3kxclone-1"), 300_000, "the terminal");
      const text = readFileSync(join(storeDir, terminal.logArtifact!.ref), "utf8");
      assert.deepEqual([mill.statuses.get("3kxclone-1"), terminal.error], [["running", "success"], ""], text);
      assert.match(text, new RegExp(`head=${pushed} count=2 version=v3 tags=v0\\.1,v0\\.4,`));
      const lines = text
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(
        lines.some((line) => line.kind === "control" && line.step_id === -1 && /^clone/.test(String(line.content))),
        "the clone is a system step",
      );
      assert.ok(
        lines.some((line) => line.content === `warning: ${MILL_CACHES_OFF}`),
        "the caches' warning",
      );
    } finally {
      await knot.stop();
    }
  });

  it("answers a reserve when full TRANSIENT, and an engine or image it cannot run INCOMPATIBLE with the reason", async () => {
    assert.equal((await mill.reserve(offer("3kxfull-1", step("a", "true")))).accepted, true);
    assert.equal((await mill.reserve(offer("3kxfull-2", step("a", "true")))).accepted, true);
    const full = await mill.reserve(offer("3kxfull-3", step("a", "true")));
    assert.deepEqual([full.accepted, full.rejectClass], [false, REJECT_CLASS.transient]);
    mill.release("3kxfull-1");
    mill.release("3kxfull-2");
    const dagger = await mill.reserve(offer("3kxbad-1", step("a", "true"), { engine: "dagger" }));
    assert.deepEqual([dagger.accepted, dagger.rejectClass], [false, REJECT_CLASS.incompatible]);
    const image = await mill.reserve(offer("3kxbad-2", step("a", "true"), { image: "ubuntu" }));
    assert.deepEqual([image.accepted, image.rejectClass], [false, REJECT_CLASS.incompatible]);
    assert.match(image.rejectReason, /ubuntu/);
    await mill.waitFor(
      () => mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.length === 0,
      10_000,
      "the released seats",
    );
  });

  it("cancels a run mid-step: CancelAck at once, CANCELLED within 10 s", async () => {
    assert.equal((await mill.reserve(offer("3kxmill-3", step("long", "echo started; sleep 300")))).accepted, true);
    assert.equal(await mill.commit("3kxmill-3"), "committed");
    await mill.waitFor(
      () => mill.liveLines("3kxmill-3").some((line) => line.content === "started"),
      300_000,
      "the step's first line",
    );
    const timing = await mill.cancel("3kxmill-3");
    assert.ok(timing.ackMs < 1_000, `CancelAck after ${timing.ackMs} ms`);
    assert.ok(timing.terminalMs < 10_000, `terminal after ${timing.terminalMs} ms`);
    assert.deepEqual(mill.statuses.get("3kxmill-3"), ["running", "cancelled"]);
  });

  it("restarts after SIGKILL mid-run with the same epoch, replays its outbox, re-attaches to the run and ends it with exactly one SUCCESS terminal, each line stored once and the secret masked", async () => {
    mill.ackEnabled = false;
    const count =
      'i=0; while [ $i -lt 16 ]; do echo "line-$i"; i=$((i+1)); sleep 0.5; done; echo "token=$DEPLOY_TOKEN"';
    assert.equal((await mill.reserve(offer("3kxmill-4", step("count", count)))).accepted, true);
    assert.equal(await mill.commit("3kxmill-4", [{ key: "DEPLOY_TOKEN", value: SECRET }]), "committed");
    await mill.waitFor(
      () => mill.liveLines("3kxmill-4").some((line) => line.content === "line-3"),
      300_000,
      "the step's fourth line",
    );
    const epoch = mill.messages("hello").at(-1)!.epoch;
    const connections = mill.connections;
    executor.child.kill("SIGKILL");
    await executor.exited;
    mill.ackEnabled = true;
    executor = await startExecutor(args());
    await connected(connections + 1);
    assert.equal(mill.messages("hello").at(-1)!.epoch, epoch);
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxmill-4"), 120_000, "the run's terminal");
    assert.deepEqual(mill.statuses.get("3kxmill-4"), ["running", "success"], executor.output());
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    // Resumed from the mill's cursor: RUNNING (applied, never acknowledged) not sent twice, the terminal numbered on from it.
    const sent = mill
      .messages("eventBatch")
      .flatMap((batch) => batch.events)
      .filter((event) => event.leaseId === "3kxmill-4");
    assert.deepEqual(
      sent.map((event) => (event.statusEvent ? "running" : "terminal")),
      ["running", "terminal"],
    );
    assert.equal(sent[1]!.seqno, sent[0]!.seqno + 1);
    const stored = readFileSync(join(storeDir, terminal.logArtifact!.ref));
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    const contents = stored
      .toString("utf8")
      .trim()
      .split("\n")
      // The output followed again after the restart comes as one chunk, one data line of several lines.
      .flatMap((line) => (JSON.parse(line) as { content: string }).content.split("\n"));
    assert.deepEqual(
      contents.filter((content) => /^line-\d+$/.test(content)),
      Array.from({ length: 16 }, (_, index) => `line-${index}`),
      "every line of the step stored once, in order",
    );
    assert.equal(contents.filter((content) => content === "count").length, 2, "the step's start and end, once each");
    assert.ok(contents.includes("token=***"), "the secret read back from the pod masks it");
    for (const line of mill.liveLines("3kxmill-4"))
      assert.ok(!JSON.stringify(line).includes(SECRET), "a live line holds the secret");
    for (const form of [SECRET, Buffer.from(SECRET).toString("base64")])
      assert.ok(!readTree(stateDir).some((file) => file.includes(form)), `a file of the state directory holds ${form}`);
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("restarts after SIGKILL with the run's pod deleted meanwhile, and ends it with exactly one failed runner-lost terminal saying what it found", async () => {
    mill.ackEnabled = false;
    assert.equal((await mill.reserve(offer("3kxmill-5", step("long", "echo started; sleep 300")))).accepted, true);
    assert.equal(await mill.commit("3kxmill-5"), "committed");
    await mill.waitFor(
      () => mill.liveLines("3kxmill-5").some((line) => line.content === "started"),
      300_000,
      "the step's first line",
    );
    const connections = mill.connections;
    executor.child.kill("SIGKILL");
    await executor.exited;
    const jobName = buildJobName(buildLeaseRunId("3kxmill-5"));
    // Not execFileSync: the local cluster's API server answers from this process's event loop.
    await promisify(execFile)(KUBECTL, [
      "--kubeconfig",
      cluster.kubeconfigPath,
      "delete",
      "pod",
      "-l",
      `job-name=${jobName}`,
      "--wait=false",
    ]);
    mill.ackEnabled = true;
    executor = await startExecutor(args());
    await connected(connections + 1);
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxmill-5"), 120_000, "the lost run's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.failed);
    assert.match(terminal.error, /^runner-lost: .*pod/);
    assert.deepEqual(mill.statuses.get("3kxmill-5"), ["running", "failed"], executor.output());
    assert.match(readFileSync(join(storeDir, terminal.logArtifact!.ref), "utf8"), /started/);
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });
});
