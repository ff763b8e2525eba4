// End to end through the real CLI and the fake kubectl, whose pods are bubblewrap sandboxes.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { createFakeCluster, type FakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { formatCommand, quoteArg } from "../../src/events/format-event.js";
import { PLANNED_POD } from "../../src/dry-run/call-plan.js";
import { findNobodySkipReason } from "../support/nobody.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli } from "../support/run-cli.js";

const EXAMPLE_STEPS = readFileSync(join(REPO_ROOT, "examples", "hello", "steps.tsv"), "utf8");

async function withCluster(t: { after: (fn: () => Promise<void>) => void }): Promise<FakeCluster> {
  const cluster = await createFakeCluster();
  t.after(() => cluster.cleanup());
  return cluster;
}

function runArgs(cluster: FakeCluster, ws: ReturnType<typeof makeWorkspace>, extra: string[] = []): string[] {
  return [
    "run",
    "--checkout",
    ws.checkout,
    "--steps",
    ws.stepsFile,
    "--shared-steps",
    ws.sharedSteps,
    "--out",
    ws.out,
    "--transport",
    "kubectl",
    "--kubectl",
    cluster.kubectlPath,
    "--kubeconfig",
    cluster.kubeconfigPath,
    ...extra,
  ];
}

async function assertNoJobLeft(cluster: FakeCluster): Promise<void> {
  assert.deepEqual(await cluster.jobs(), [], "a Job was left behind");
  for (const pod of await cluster.pods()) assert.equal(pod.sandboxAlive, false, `pod ${pod.name} still runs`);
}

/**
 * What --dry-run prints for the same options and run id and the calls the real run made agree, up to polling
 * repetitions and Pending-only event reads: the same words, quoted the same way.
 */
async function assertCallsFollowTheDryRun(
  actual: ReadonlyArray<readonly string[]>,
  result: ReturnType<typeof readResult>,
  ws: ReturnType<typeof makeWorkspace>,
  cluster: FakeCluster,
): Promise<void> {
  const isEvents = (line: string): boolean => / get events /.test(line);
  // The cancel watch and the heartbeat run alongside the other calls (the heartbeat only in runs longer than its interval).
  const isPresence = (line: string): boolean =>
    / get job \S+ --watch /.test(line) || / patch job .*knotless\.dev\/heartbeat/.test(line);
  const collapse = (lines: readonly string[]): string[] =>
    lines
      .filter((line) => !isEvents(line) && !isPresence(line))
      .filter((line, index, all) => index === 0 || line !== all[index - 1]);
  const dry = await runCli(
    [...runArgs(cluster, { ...ws, out: `${ws.out}-dry` }), "--dry-run", "--run-id", result.runId],
    { env: cluster.env },
  );
  assert.equal(dry.code, 0, dry.stderr);
  const planned: string[] = []; // a quoted argument may span lines: a line that is no comment and no new call continues one
  for (const line of dry.stdout.slice(dry.stdout.indexOf("# kubectl calls")).split("\n")) {
    if (line.startsWith(cluster.kubectlPath)) planned.push(line);
    else if (!line.startsWith("#") && planned.length > 0) planned[planned.length - 1] += `\n${line}`;
  }
  planned[planned.length - 1] = planned.at(-1)!.replace(/\n$/, "");
  for (const [index, line] of planned.entries())
    planned[index] = line.replaceAll(quoteArg(PLANNED_POD), result.job.pod!);
  const made = actual.map((args) => formatCommand(cluster.kubectlPath, args));
  // The claim of a warm placeholder is planned, and made only when one is there.
  const isClaim = (line: string): boolean => / delete --raw /.test(line);
  const expected = made.some(isClaim) ? planned : planned.filter((line) => !isClaim(line));
  assert.deepEqual(collapse(made), collapse(expected));
  const watch = planned.find((line) => / --watch /.test(line));
  assert.ok(watch && made.includes(watch), "the run watched its Job as the plan says");
}

describe("the CLI with the fake kubectl", { concurrency: 2 }, () => {
  it("runs the example's four steps, uploads the checkout and brings ran.txt back, then deletes the Job", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace(EXAMPLE_STEPS);
    const runnerTmp = mkdtempSync(join(tmpdir(), "runner-tmp-"));
    t.after(() => rmSync(runnerTmp, { recursive: true, force: true }));
    const run = await runCli(runArgs(cluster, ws), { env: { ...cluster.env, TMPDIR: runnerTmp } });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(readdirSync(runnerTmp), [], "the runner's staged files are removed");
    assert.deepEqual(
      readdirSync(ws.checkout).sort(),
      ["README.txt", "steps.tsv"],
      "removing the staging dir left the checkout its link points at alone",
    );
    assert.deepEqual(readdirSync(ws.sharedSteps), ["greet.sh"], "and the shared steps");
    const result = readResult(ws.out);
    assert.equal(result.status, "success");
    assert.deepEqual(
      result.steps.map((s) => [s.name, s.status, s.exitCode]),
      [
        ["date", "success", 0],
        ["hostname", "success", 0],
        ["files", "success", 0],
        ["outputs", "success", 0],
      ],
    );
    assert.match(run.stdout, /steps\.tsv/, "the files step lists /work/steps.tsv");
    assert.match(run.stdout, /greet\.sh/, "the files step lists /steps/greet.sh");
    assert.match(readFileSync(join(ws.out, "outputs", "ran.txt"), "utf8"), /^ran on knotless-run-/);
    assert.deepEqual(
      [...result.outputs].map((o) => o.path),
      ["ran.txt"],
    );
    assert.match(
      readFileSync(join(ws.out, "run.log"), "utf8"),
      /Z \[step 3 stdout\]\n( {2}.*\n)* {2}.*steps\.tsv\n/,
      "run.log holds the step output, indented under its header",
    );
    assert.doesNotMatch(
      readFileSync(join(ws.out, "run.log"), "utf8"),
      /through a pipe/,
      "the download fell back to a pipe",
    );
    assert.match(
      readFileSync(join(ws.out, "run.log"), "utf8"),
      /ok upload .*packed by GNU tar \d+\.\d+; receipt and count verified in the pod/,
    );
    const calls = await cluster.calls();
    assert.equal(
      calls.filter((c) => c.argv.includes("exec") && c.argv.includes("run") && c.argv.at(-2) === "run").length,
      4,
      "one exec per step",
    );
    assert.ok(calls.at(-1)!.argv.includes("delete"), "the last call deletes the Job");
    await assertCallsFollowTheDryRun(
      calls.map((c) => c.argv),
      result,
      ws,
      cluster,
    );
    await assertNoJobLeft(cluster);
    for (const file of ["run.log", "log.ndjson", "result.json"]) assert.ok(existsSync(join(ws.out, file)), file);
    const ndjson = readFileSync(join(ws.out, "log.ndjson"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.ok(ndjson.some((l) => l.kind === "control" && l.step === 3 && l.status === "end" && l.exitCode === 0));
    assert.ok(
      ndjson.some((l) => l.kind === "data" && l.step === 1 && l.stream === "stdout" && /knotless-run-/.test(l.content)),
    );
  });

  it("uploads with the runner's own packer when KNOTLESS_TAR is none, with the same files in the pod", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace(EXAMPLE_STEPS);
    const run = await runCli(runArgs(cluster, ws), { env: { ...cluster.env, KNOTLESS_TAR: "none" } });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /steps\.tsv/, "the files step lists /work/steps.tsv");
    assert.match(run.stdout, /greet\.sh/, "the files step lists /steps/greet.sh");
    assert.match(
      readFileSync(join(ws.out, "run.log"), "utf8"),
      /ok upload .*packed by the runner's packer; receipt and count verified in the pod/,
    );
    assert.equal(readResult(ws.out).status, "success");
    await assertNoJobLeft(cluster);
  });

  it("falls back to the runner's own packer when KNOTLESS_TAR is not GNU tar", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("files\tls /work /steps\n");
    const notGnu = join(ws.out, "..", "bsdtar");
    writeFileSync(notGnu, "#!/bin/sh\necho 'bsdtar 3.6.2 - libarchive 3.6.2'\n", { mode: 0o755 });
    const run = await runCli(runArgs(cluster, ws), { env: { ...cluster.env, KNOTLESS_TAR: notGnu } });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /steps\.tsv/);
    assert.match(readFileSync(join(ws.out, "run.log"), "utf8"), /packed by the runner's packer/);
  });

  it("brings the outputs back through a pipe when the temp dir is too long for kubectl's stdout socket", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace(
      "write\thead -c 300000 /dev/urandom > /outputs/big.bin; echo small > /outputs/small.txt\n",
    );
    const base = mkdtempSync(join(tmpdir(), "runner-long-tmp-"));
    t.after(() => rmSync(base, { recursive: true, force: true }));
    const longTmp = join(base, "t".repeat(100));
    mkdirSync(longTmp);
    const run = await runCli(runArgs(cluster, ws), { env: { ...cluster.env, TMPDIR: longTmp } });
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(ws.out);
    assert.deepEqual(
      [...result.outputs].map((o) => [o.path, o.size, o.sha256]),
      ["big.bin", "small.txt"].map((name) => {
        const content = readFileSync(join(ws.out, "outputs", name));
        return [name, content.length, createHash("sha256").update(content).digest("hex")];
      }),
    );
    assert.equal([...result.outputs][0]?.size, 300000);
    assert.match(
      readFileSync(join(ws.out, "run.log"), "utf8"),
      /download: reading kubectl's output through a pipe \(the socket path .* is longer than 103 bytes\)/,
    );
    assert.deepEqual(readdirSync(longTmp), [], "the runner left files in its temp dir");
    assert.deepEqual(readdirSync(base), ["t".repeat(100)], "a socket was bound at a path cut short");
    await assertNoJobLeft(cluster);
  });

  it("finishes the run and deletes the Job when run.log cannot be written, warning on stderr", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("first\techo one\n");
    mkdirSync(join(ws.out, "run.log"), { recursive: true }); // a directory where the log file should go
    const run = await runCli(runArgs(cluster, ws), { env: cluster.env });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /warning: cannot write .*run\.log: EISDIR/);
    assert.equal(readResult(ws.out).status, "success");
    assert.ok(
      readFileSync(join(ws.out, "log.ndjson"), "utf8").includes('"content":"one\\n"'),
      "the other log is complete",
    );
    await assertNoJobLeft(cluster);
  });

  it("deletes the Job and exits 3 when the runner crashes with an uncaught exception mid-step", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("slow\tsleep 60\n");
    const preload = pathToFileURL(join(REPO_ROOT, "dist", "test", "fixtures", "crash-after-first-step.js")).href;
    const runnerTmp = mkdtempSync(join(tmpdir(), "runner-tmp-"));
    t.after(() => rmSync(runnerTmp, { recursive: true, force: true }));
    const run = await runCli(runArgs(cluster, ws), {
      env: { ...cluster.env, NODE_OPTIONS: `--import ${preload}`, TMPDIR: runnerTmp },
    });
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /internal error: Error: injected crash after the first step started/);
    assert.match(run.stderr, /deleted Job knotless-run-/);
    assert.deepEqual(readdirSync(runnerTmp), [], "the runner's staged files are removed");
    assert.deepEqual(readdirSync(ws.checkout).sort(), ["README.txt", "steps.tsv"], "the checkout is left alone");
    const result = readResult(ws.out);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "internal");
    assert.match(
      result.error ?? "",
      /^internal error: injected crash after the first step started; deleted Job knotless-run-/,
    );
    assert.deepEqual(
      result.steps.map((step) => [step.name, step.status, step.exitCode]),
      [["slow", "failed", null]],
    );
    assert.ok(result.job.pod, "the result names the pod");
    // The logs were finished before the process exited: the crash, the deleted Job and the run's end are in both.
    const runLog = readFileSync(join(ws.out, "run.log"), "utf8");
    assert.match(runLog, /▶ step 1: slow\n/);
    assert.match(runLog, /error: internal error: Error: injected crash after the first step started\n/);
    assert.match(runLog, /Z deleted Job knotless-run-/, "a deletion that worked is not an error");
    assert.match(
      runLog,
      /run failed in [^\n]*: internal error: injected crash after the first step started; deleted Job knotless-run-[^\n]*\n$/,
    );
    const ndjson = readFileSync(join(ws.out, "log.ndjson"), "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { content?: string; event?: string });
    assert.equal(ndjson.at(-1)?.event, "run-end");
    assert.ok(
      ndjson.some(
        (line) => line.event === "notice" && line.content?.startsWith("error: internal error: Error: injected crash"),
      ),
      "log.ndjson has the crash",
    );
    await assertNoJobLeft(cluster);
  });

  it("logs a crash whose Job could not be deleted as an error that names the delete command", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("slow\tsleep 60\n");
    const refusesDelete = join(mkdtempSync(join(tmpdir(), "kubectl-no-delete-")), "kubectl");
    t.after(() => rmSync(join(refusesDelete, ".."), { recursive: true, force: true }));
    writeFileSync(
      refusesDelete,
      `#!/bin/sh\nfor a in "$@"; do [ "$a" = delete ] && { echo 'Error from server (Forbidden): cannot delete jobs' >&2; exit 1; }; done\nexec ${cluster.kubectlPath} "$@"\n`,
    );
    chmodSync(refusesDelete, 0o755);
    const preload = pathToFileURL(join(REPO_ROOT, "dist", "test", "fixtures", "crash-after-first-step.js")).href;
    const args = runArgs(cluster, ws).map((arg) => (arg === cluster.kubectlPath ? refusesDelete : arg));
    const run = await runCli(args, { env: { ...cluster.env, NODE_OPTIONS: `--import ${preload}` } });
    assert.equal(run.code, 3, run.stderr);
    const runLog = readFileSync(join(ws.out, "run.log"), "utf8");
    assert.match(
      runLog,
      /error: could not delete Job knotless-run-[^\n]*Forbidden[^\n]*; delete it with: .*delete job knotless-run-/,
    );
    assert.ok(
      runLog.includes(`delete it with: ${quoteArg(refusesDelete)} --kubeconfig`),
      "the command names the kubectl the run was given",
    );
    assert.equal((await cluster.jobs()).length, 1, "the Job is still there (its delete was refused)");
  });

  it("keeps the first --max-log-bytes of step output in run.log, log.ndjson and on the console alike, says so once in each and lets the steps run on", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace(
      'chatty\ti=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done\nsecond\techo past the cut >&2; echo done > /outputs/done.txt\n',
    );
    const printed = `${Array.from({ length: 3000 }, (_, i) => `line ${i}\n`).join("")}past the cut\n`;
    const run = await runCli(runArgs(cluster, ws, ["--max-log-bytes", "1K"]), { env: cluster.env });
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(ws.out);
    assert.deepEqual(
      result.steps.map((s) => s.status),
      ["success", "success"],
    );
    assert.deepEqual(
      [...result.outputs].map((o) => o.path),
      ["done.txt"],
      "the second step ran to its end",
    );
    assert.deepEqual(result.logs, { limitBytes: 1000, keptBytes: 1000, droppedBytes: printed.length - 1000 });
    const kept = printed.slice(0, 1000);
    // The pod keeps 1000 bytes of step 1's stdout (its bound is the log limit) and says what it dropped; the host's
    // log then fills exactly, so its own notice comes at the next byte, step 2's stderr.
    const limitNotice = /step output reached the log limit of 1000 bytes in step 2 \(second\)'s stderr/g;
    assert.match(
      run.stderr,
      /step 1 \(chatty\)'s stdout passed the pod's output bound of 1000 bytes \(--max-log-bytes\): 27890 more bytes were dropped in the pod/,
    );
    // The console: the kept output on stdout (its cut line ended before the next runner line), the notice once on stderr.
    assert.equal(run.stdout.replace(/\n$/, ""), kept.replace(/\n$/, ""));
    assert.equal(run.stderr.match(limitNotice)?.length, 1, run.stderr);
    const ndjson = readFileSync(join(ws.out, "log.ndjson"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; step: number; stream: string; content: string });
    const outputLines = ndjson.filter((l) => l.kind === "data" && l.step >= 0);
    assert.equal(outputLines.map((l) => l.content).join(""), kept);
    assert.equal(ndjson.filter((l) => l.stream === "system" && limitNotice.test(l.content)).length, 1);
    const runLog = readFileSync(join(ws.out, "run.log"), "utf8");
    assert.equal(runLog.match(limitNotice)?.length, 1);
    const keptLines = kept.split("\n");
    assert.ok(
      runLog.includes(keptLines.at(-2)!) && runLog.includes(keptLines.at(-1)!),
      "run.log holds the kept output up to the cut",
    );
    assert.ok(
      !runLog.includes(`line ${keptLines.length}\n`) && !runLog.includes("past the cut"),
      "run.log holds nothing past the cut",
    );
    await assertNoJobLeft(cluster);
  });

  it("fails with the step's exit code, skips later steps and exits 1 when a step exits 3", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("first\techo one\nbroken\techo about to fail >&2; exit 3\nlater\techo never\n");
    const run = await runCli(runArgs(cluster, ws), { env: cluster.env });
    assert.equal(run.code, 1, run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, 3);
    assert.equal(result.error, null);
    assert.deepEqual(
      result.steps.map((s) => [s.status, s.exitCode]),
      [
        ["success", 0],
        ["failed", 3],
        ["skipped", null],
      ],
    );
    assert.match(readFileSync(join(ws.out, "run.log"), "utf8"), /Z \[step 2 stderr\]\n {2}about to fail\n/);
    await assertNoJobLeft(cluster);
  });

  it("times a step out, stops its processes in the pod and exits 1 with status timeout", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace(
      "slow\ttrap '' TERM; (trap '' TERM; sleep 300) & echo started; sleep 300\nlater\techo never\n",
    );
    const run = await runCli(runArgs(cluster, ws, ["--step-timeout", "3s", "--keep"]), { env: cluster.env });
    assert.equal(run.code, 1, run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.status, "timeout");
    assert.deepEqual(
      result.steps.map((s) => [s.status, s.timedOut]),
      [
        ["timeout", true],
        ["skipped", false],
      ],
    );
    const [pod] = await cluster.pods();
    const podProcesses = await cluster.processesInPod(pod!.name);
    assert.deepEqual(
      podProcesses.filter((p) => /sleep 300/.test(p)),
      [],
      `left in the pod: ${podProcesses.join(" | ")}`,
    );
    assert.match(run.stderr, /kept Job .*delete it with: .*delete job/);
    assert.ok(run.stderr.includes(`delete it with: ${quoteArg(cluster.kubectlPath)} --kubeconfig`), run.stderr);
  });

  it("cancels on SIGTERM mid-step: status cancelled, the Job deleted, exit 130", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("wait\techo waiting; sleep 120\nlater\techo never\n");
    const run = await runCli(runArgs(cluster, ws), {
      env: cluster.env,
      signalWhen: { when: /waiting/, signal: "SIGTERM" },
    });
    assert.equal(run.code, 130, run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.status, "cancelled");
    assert.deepEqual(
      result.steps.map((s) => s.status),
      ["cancelled", "skipped"],
    );
    await assertNoJobLeft(cluster);
  });

  it("exits at once on a second SIGTERM: exit 130, the delete command named, result.json and both logs finished", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("wait\techo waiting; sleep 120\nlater\techo never\n");
    const runnerTmp = mkdtempSync(join(tmpdir(), "runner-tmp-"));
    t.after(() => rmSync(runnerTmp, { recursive: true, force: true }));
    const run = await runCli(runArgs(cluster, ws), {
      env: { ...cluster.env, TMPDIR: runnerTmp },
      signalsWhen: [
        { when: /waiting/, signal: "SIGTERM" },
        { when: /cancelling the run/, signal: "SIGTERM" },
      ],
    });
    assert.equal(run.code, 130, run.stderr);
    assert.match(run.stderr, /exiting now; the Job may remain: \S*kubectl .*delete job knotless-run-/);
    assert.deepEqual(readdirSync(runnerTmp), [], "the runner's staged files are removed");
    const result = readResult(ws.out);
    assert.equal(result.status, "cancelled");
    assert.equal(result.errorReason, "cancelled");
    assert.match(result.error ?? "", /^cancelled by SIGTERM, then SIGTERM again: exiting now; the Job may remain: /);
    assert.deepEqual(
      result.steps.map((s) => s.status),
      ["cancelled", "skipped"],
    );
    const runLog = readFileSync(join(ws.out, "run.log"), "utf8");
    assert.match(runLog, /Z \[step 1 stdout\]\n {2}waiting\n/);
    assert.match(runLog, /error: SIGTERM again: exiting now; the Job may remain: /);
    assert.match(runLog, /run cancelled in [^\n]*\n$/);
  });

  it("never reports success when the exec ends without an exit code: exit 3", async (t) => {
    const cluster = await withCluster(t);
    await cluster.setFaults({ execSwallow: [{ match: "helper.sh", times: 1000 }] });
    const ws = makeWorkspace("quiet\ttrue\n");
    const run = await runCli(runArgs(cluster, ws), { env: cluster.env });
    assert.equal(run.code, 3, run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "exec-no-exit-code");
    assert.notEqual(result.steps[0]!.status, "success");
    await assertNoJobLeft(cluster);
  });

  /** Bad input a new user meets: each case exits 2 at once with its message, before any kubectl call. */
  const BAD_INPUT: ReadonlyArray<{
    readonly what: string;
    readonly steps: string | Buffer;
    readonly args?: (ws: ReturnType<typeof makeWorkspace>) => string[];
    readonly message: (ws: ReturnType<typeof makeWorkspace>) => RegExp;
  }> = [
    {
      what: "a steps line without a tab",
      steps: "good\ttrue\nno tab on this line\n",
      message: (ws) => new RegExp(`${ws.stepsFile}:2: expected \`name<TAB>script\``),
    },
    {
      what: "a step name that is not UTF-8",
      steps: Buffer.concat([Buffer.from("good\ttrue\n"), Buffer.from("caf\xe9\techo latin-1\n", "latin1")]),
      message: (ws) => new RegExp(`${ws.stepsFile}:2: expected a step name in UTF-8$`, "m"),
    },
    {
      what: "two steps with the same name",
      steps: "build\ttrue\ntest\ttrue\nbuild\tfalse\n",
      message: (ws) => new RegExp(`${ws.stepsFile}:3: step name "build" is already used at line 1$`, "m"),
    },
    {
      what: "an unknown flag",
      steps: "a\ttrue\n",
      args: () => ["--no-such-flag"],
      message: () => /unknown option '--no-such-flag'/,
    },
    {
      what: "an --out under a file",
      steps: "a\ttrue\n",
      args: (ws) => {
        writeFileSync(`${ws.out}-file`, "");
        return ["--out", join(`${ws.out}-file`, "out")];
      },
      message: () => /--out: cannot create the directory .*-file\/out: ENOTDIR/,
    },
    {
      what: "an --out under /proc (where node 20's recursive mkdir spins)",
      steps: "a\ttrue\n",
      args: () => ["--out", "/proc/forbidden"],
      message: () => /--out: cannot create the directory \/proc\/forbidden: ENOENT/,
    },
  ];

  for (const bad of BAD_INPUT) {
    it(`refuses ${bad.what} with exit 2 and its message at once, calling kubectl not once`, async (t) => {
      const cluster = await withCluster(t);
      const ws = makeWorkspace("");
      writeFileSync(ws.stepsFile, bad.steps);
      const run = await runCli([...runArgs(cluster, ws), ...(bad.args?.(ws) ?? [])], {
        env: cluster.env,
        timeoutMs: 30_000,
      });
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, bad.message(ws));
      assert.deepEqual(await cluster.calls(), []);
    });
  }

  it(
    "refuses a checkout with an unreadable file with exit 2 before any kubectl call, in a run and in a dry run",
    { skip: findNobodySkipReason() },
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), "knotless-unreadable-"));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      chmodSync(dir, 0o777); // nobody writes the out dir and the marker here
      const checkout = join(dir, "checkout");
      mkdirSync(join(checkout, "src"), { recursive: true });
      writeFileSync(join(checkout, "README"), "readme\n");
      writeFileSync(join(checkout, "src", "secret.key"), "no access\n", { mode: 0o000 });
      const stepsFile = join(dir, "steps.tsv");
      writeFileSync(stepsFile, "a\ttrue\n");
      const marker = join(dir, "kubectl-was-called");
      const kubectl = join(dir, "kubectl");
      writeFileSync(kubectl, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`, { mode: 0o755 });
      const nobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
      const args = [
        "run",
        "--checkout",
        checkout,
        "--steps",
        stepsFile,
        "--namespace",
        "ci",
        "--transport",
        "kubectl",
        "--kubectl",
        kubectl,
      ];
      const secret = join(checkout, "src", "secret.key");
      const run = await runCli([...args, "--out", join(dir, "out")], nobody ? { user: nobody } : {});
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stdout + run.stderr, new RegExp(`cannot upload ${secret}: EACCES: permission denied`));
      const result = readResult(join(dir, "out"));
      assert.equal(result.errorReason, "input");
      assert.equal(result.job.pod, null);
      const dry = await runCli([...args, "--out", join(dir, "dry-out"), "--dry-run"], nobody ? { user: nobody } : {});
      assert.equal(dry.code, 2, dry.stderr);
      assert.match(dry.stderr, new RegExp(`cannot upload ${secret}: EACCES: permission denied`));
      assert.equal(dry.stdout, "", "a dry run that fails validation prints no plan");
      assert.equal(existsSync(marker), false, "kubectl was called");
    },
  );

  it("prints the manifest and every call on --dry-run and spawns nothing", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("a\ttrue\nb\ttrue\n");
    const run = await runCli([...runArgs(cluster, ws), "--dry-run", "--run-id", "dry-1"], { env: cluster.env });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /kind: Job/);
    assert.match(run.stdout, /name: knotless-run-dry-1/);
    const calls = run.stdout.split("\n").filter((line) => line.startsWith(cluster.kubectlPath));
    assert.equal(
      calls.length,
      14,
      "get placeholders, claim one, create, create the budget, watch, heartbeat, get pods, get events, upload, two steps, download, delete, delete the budget",
    );
    assert.equal(calls.filter((line) => /helper\.sh run \d$/.test(line)).length, 2, "one exec per step");
    assert.deepEqual(await cluster.calls(), []);
    assert.equal(existsSync(ws.out), false, "a dry run writes nothing");
  });
});
