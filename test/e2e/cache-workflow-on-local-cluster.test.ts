// `run --workflow` with caches: and artifacts: on the local cluster, the real kubectl and the directory store: keys from the lock file, hits, misses, races, damage, hostility.
import assert from "node:assert/strict";
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { execFile } from "node:child_process";
import { tmpdir } from "node:os";
import { promisify } from "node:util";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { listStoredEntries } from "../../src/cache/list-entries.js";
import type { RunResult } from "../../src/run/run-result.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { readResult, runCli } from "../support/run-cli.js";

const execFileAsync = promisify(execFile);
const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const REPO = "did:plc:e2e/cache-repo";

/**
 * Two caches keyed on the lock file: `deps` falls back to any older `deps-` entry, `exact` has no fallback. The
 * install step builds what is missing and says which it found.
 */
const WORKFLOW = `
caches:
  - key: 'deps-{{ hashFiles "lock.txt" }}'
    restore-keys: [deps-]
    paths: [deps]
  - key: 'exact-{{ hashFiles "lock.txt" }}'
    paths: [/work/exact, /root/never-made]
artifacts:
  - name: reports
    paths: [/outputs/reports/**]
    when: failure
  - name: nothing
    paths: ["dist/*.tgz"]
steps:
  - name: install
    command: |
      if [ -f /work/deps/lock.txt ]; then echo "deps from $(cat /work/deps/lock.txt)"; else echo "deps built"; fi
      if [ -f /work/exact/lock.txt ]; then echo "exact from $(cat /work/exact/lock.txt)"; else echo "exact built"; fi
      mkdir -p /work/deps /work/exact
      cp lock.txt /work/deps/lock.txt && cp lock.txt /work/exact/lock.txt
      head -c 300000 /dev/urandom > /work/deps/blob
  - name: check
    command: |
      mkdir -p /outputs/reports && echo "report of $(cat lock.txt)" > /outputs/reports/summary.txt
      [ "\${FAIL:-no}" = no ]
`;

/**
 * The workflow behind a first step that waits (up to 2 min) for /tmp/go in its pod, after saying it waits in
 * /tmp/waiting: the caches are restored before the first step, so two runs held there have both restored before either saves.
 */
const BARRIER_WORKFLOW = WORKFLOW.replace(
  "steps:\n",
  "steps:\n  - name: barrier\n    command: |\n      touch /tmp/waiting; i=0\n      while [ ! -f /tmp/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n",
);

/**
 * A cache whose first run's step leaves a link out of its path (PLANT=yes): stored as the pod packed it, refused by the
 * next restore's gate. Every run fails if the link ever reaches its pod.
 */
const HOSTILE = (plant: boolean): string => `
environment:
  PLANT: ${plant ? "yes" : "no"}
caches:
  - key: hostile-1
    paths: [/work/evil]
steps:
  - name: plant
    command: |
      if [ -L /work/evil/passwd ]; then echo "the link reached the pod"; exit 1; fi
      if [ -f /work/evil/sound ]; then echo "sound restored"; fi
      mkdir -p /work/evil && echo sound > /work/evil/sound
      if [ "$PLANT" = yes ]; then ln -s ../../../../etc/passwd /work/evil/passwd && echo planted; fi
`;

interface Run {
  readonly code: number | null;
  readonly result: RunResult;
  readonly stdout: string;
  readonly stderr: string;
  readonly out: string;
  readonly log: string;
}

describe("workflow caches and artifacts on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  let root = "";
  let cacheDir = "";
  let runs = 0;
  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
    root = mkdtempSync(join(tmpdir(), "knotless-cache-workflow-"));
    cacheDir = join(root, "cache");
  });
  after(async () => {
    await cluster?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** One `run --workflow` of `workflow` with a checkout holding `lock.txt`; `env` reaches the steps through the workflow's environment. */
  async function run(
    lock: string,
    options: { workflow?: string; fail?: boolean; cacheDir?: string; args?: readonly string[] } = {},
  ): Promise<Run> {
    const n = ++runs;
    const dir = join(root, `run-${n}`);
    const checkout = join(dir, "checkout");
    mkdirSync(checkout, { recursive: true });
    writeFileSync(join(checkout, "lock.txt"), lock);
    const workflowFile = join(dir, "ci.yml");
    writeFileSync(workflowFile, `${options.fail ? "environment:\n  FAIL: yes\n" : ""}${options.workflow ?? WORKFLOW}`);
    const out = join(dir, "out");
    const cli = await runCli(
      [
        "run",
        "--workflow",
        workflowFile,
        "--checkout",
        checkout,
        "--out",
        out,
        "--event",
        "manual",
        "--repo",
        REPO,
        "--cache-dir",
        options.cacheDir ?? cacheDir,
        ...(options.args ?? []),
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--run-id",
        `cw-${process.pid}-${n}`,
      ],
      { timeoutMs: 300_000 },
    );
    return {
      code: cli.code,
      stdout: cli.stdout,
      stderr: cli.stderr,
      out,
      result: readResult(out),
      log: readFileSync(join(out, "run.log"), "utf8"),
    };
  }

  /** Lets the runs held by BARRIER_WORKFLOW go on once `count` of them wait in their first step. */
  async function openBarrier(count: number): Promise<void> {
    const admin = (pod: { namespace: string; name: string }, command: string) =>
      execFileAsync(KUBECTL, [
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--namespace",
        pod.namespace,
        "exec",
        pod.name,
        "-c",
        "run",
        "--",
        "sh",
        "-c",
        command,
      ]).then(
        () => true,
        () => false,
      );
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      const running = cluster
        .objects("pods")
        .filter((pod) => pod.status?.phase === "Running")
        .map((pod) => ({ namespace: pod.metadata.namespace!, name: pod.metadata.name }));
      const waiting = (
        await Promise.all(running.map(async (pod) => ((await admin(pod, "test -f /tmp/waiting")) ? [pod] : [])))
      ).flat();
      if (waiting.length >= count) {
        for (const pod of waiting)
          assert.ok(await admin(pod, "touch /tmp/go"), `could not open the barrier in ${pod.name}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`fewer than ${count} runs reached the barrier in 3 minutes`);
  }

  const statuses = (result: RunResult) => result.caches.map((c) => `${c.restore.status}/${c.save.status}`);
  const keys = async () => (await listStoredEntries(cacheDir, REPO)).entries.map((e) => e.key).sort();

  it("misses on the first run and saves both keys; the second run of the same checkout hits both exactly and saves nothing", async () => {
    const first = await run("lock v1\n");
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(statuses(first.result), ["miss/saved", "miss/saved"]);
    assert.match(first.stdout, /deps built/);
    assert.match(first.log, /cache deps-[0-9a-f]{64}: miss/);
    assert.match(first.log, /cache deps-[0-9a-f]{64}: saved /);
    assert.equal((await keys()).length, 2);
    // The default image is busybox, which has no zstd: its entries are gzip, as the check found them.
    assert.deepEqual(
      (await listStoredEntries(cacheDir, REPO)).entries.map((e) => e.compression),
      ["gzip", "gzip"],
    );

    const second = await run("lock v1\n");
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(statuses(second.result), ["exact/skipped", "exact/skipped"]);
    assert.match(second.stdout, /deps from lock v1/);
    assert.match(second.stdout, /exact from lock v1/);
    assert.match(second.log, /exact hit, restored/);
    const ndjson = readFileSync(join(second.out, "log.ndjson"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    assert.ok(
      ndjson.some(
        (line) => line.event === "cache-restore" && line.cache.status === "exact" && line.cache.bytes > 300_000,
      ),
    );
    await assertNothingLeft(cluster);
  });

  it("gives a changed lock file a miss of the exact keys and new entries, restoring deps from the older entry by its prefix", async () => {
    const before = await keys();
    const changed = await run("lock v2\n");
    assert.equal(changed.code, 0, changed.stderr);
    assert.deepEqual(statuses(changed.result), ["fallback/saved", "miss/saved"]);
    assert.match(changed.result.caches[0]!.restore.restoredKey ?? "", /^deps-/);
    assert.ok(before.includes(changed.result.caches[0]!.restore.restoredKey!));
    assert.match(changed.stdout, /deps from lock v1/);
    assert.match(changed.stdout, /exact built/);
    assert.match(changed.log, /fallback hit, restored deps-/);
    assert.equal((await keys()).length, before.length + 2);
  });

  it("lets two runs save the same new keys at once: one saves each, the other says it exists, and a third run hits them", async () => {
    // Both wait in their first step until both have restored (both miss), so each key is saved by one and found by the other.
    const [a, b] = await Promise.all([
      run("lock v3\n", { workflow: BARRIER_WORKFLOW }),
      run("lock v3\n", { workflow: BARRIER_WORKFLOW }),
      openBarrier(2),
    ]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    for (const index of [0, 1])
      assert.deepEqual([a.result.caches[index]!.save.status, b.result.caches[index]!.save.status].sort(), [
        "exists",
        "saved",
      ]);
    const third = await run("lock v3\n");
    assert.deepEqual(statuses(third.result), ["exact/skipped", "exact/skipped"]);
    assert.match(third.stdout, /exact from lock v3/);
  });

  it("takes a damaged entry as a warning: it is not restored, the run builds afresh, succeeds and saves a sound entry", async () => {
    // The newest exact- entry: the one lock v3's run restores.
    const entry = (await listStoredEntries(cacheDir, REPO)).entries
      .filter((e) => e.key.startsWith("exact-"))
      .sort((x, y) => y.createdAt - x.createdAt)[0]!;
    const fd = openSync(entry.path, "r+");
    const size = fstatSync(fd).size;
    writeSync(fd, Buffer.from("garbage!"), 0, 8, Math.floor(size / 2));
    closeSync(fd);
    const next = await run("lock v3\n");
    assert.equal(next.code, 0, next.stderr);
    assert.equal(next.result.status, "success");
    // The store finds the damage when it looks the entry up (removing it: a miss) or while it is read (a failed restore): a warning either way.
    const restore = next.result.caches[1]!.restore.status;
    assert.ok(restore === "miss" || restore === "failed", restore);
    assert.match(next.log, /warning: (cache store: removed a damaged entry|cache exact-[0-9a-f]+: restore failed)/);
    assert.match(next.stdout, /exact built/);
    assert.equal(next.result.caches[1]!.save.status, "saved");
  });

  it("stores a cache whose pod left a link out of its path as packed; the next restore refuses it before the pod gets the link, removes it, and a sound entry takes its key", async () => {
    const planted = await run("x\n", { workflow: HOSTILE(true) });
    assert.equal(planted.code, 0, planted.stderr);
    assert.match(planted.stdout, /planted/);
    assert.equal(planted.result.caches[0]!.save.status, "saved", "saves are not checked: the gate judges every way in");
    assert.ok((await keys()).includes("hostile-1"));

    const refused = await run("x\n", { workflow: HOSTILE(false) });
    assert.equal(refused.code, 0, refused.stderr);
    assert.doesNotMatch(refused.stdout, /the link reached the pod|sound restored/);
    const report = refused.result.caches[0]!;
    assert.equal(report.restore.status, "failed");
    assert.match(
      report.restore.reason ?? "",
      /refused on this host: .*evil\/passwd.*the entry was removed from the store/,
    );
    assert.match(
      refused.log,
      /warning: cache hostile-1: restore failed after [\d.]+m?s, the run goes on without it: the stored entry was refused on this host: .*"work\/evil\/passwd" is refused/,
    );
    assert.equal(report.save.status, "saved", "the refused entry's key was free again");

    const sound = await run("x\n", { workflow: HOSTILE(false) });
    assert.equal(sound.code, 0, sound.stderr);
    assert.equal(sound.result.caches[0]!.restore.status, "exact");
    assert.match(sound.stdout, /sound restored/);
    assert.deepEqual((await listStoredEntries(cacheDir)).damaged, []);
    await assertNothingLeft(cluster);
  });

  it("on a failed run, saves no cache, collects the failure artifact and warns of the one that matched nothing", async () => {
    const before = await keys();
    const failed = await run("lock v4\n", { fail: true });
    assert.equal(failed.code, 1, failed.stderr);
    assert.equal(failed.result.status, "failed");
    assert.deepEqual(
      failed.result.caches.map((c) => c.save.status),
      ["skipped", "skipped"],
    );
    assert.deepEqual(await keys(), before);
    assert.deepEqual(
      failed.result.artifacts.map((a) => [a.name, a.status]),
      [
        ["reports", "collected"],
        ["nothing", "skipped"],
      ],
    );
    assert.equal(readFileSync(join(failed.out, "artifacts", "reports", "summary.txt"), "utf8"), "report of lock v4\n");
    assert.ok(existsSync(join(failed.out, "artifacts", "reports.manifest.json")));
    const ok = await run("lock v4\n");
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(
      ok.result.artifacts.map((a) => [a.name, a.status]),
      [
        ["reports", "skipped"],
        ["nothing", "empty"],
      ],
    );
    assert.match(ok.log, /warning: artifact nothing: no file in the pod matches/);
    await assertNothingLeft(cluster);
  });

  it("evicts the least recently used entries after a save that passes --cache-max-bytes, never the one just saved", async () => {
    // Each run stores ~300 kB of random deps (gzip cannot shrink it) and a tiny exact entry: two runs do not fit in 500 kB.
    const small = join(root, "small-store");
    const limit = ["--cache-max-bytes", "500K"];
    const first = await run("lock e1\n", { cacheDir: small, args: limit });
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(statuses(first.result), ["miss/saved", "miss/saved"]);
    const second = await run("lock e2\n", { cacheDir: small, args: limit });
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(statuses(second.result), ["fallback/saved", "miss/saved"]);
    const stored = (await listStoredEntries(small, REPO)).entries;
    const firstKeys = first.result.caches.map((c) => c.key);
    const secondKeys = second.result.caches.map((c) => c.key);
    assert.deepEqual(stored.map((e) => e.key).sort(), [...secondKeys].sort(), "only the second run's entries are left");
    assert.ok(stored.reduce((sum, e) => sum + e.bytes, 0) <= 500_000, "within the limit");
    for (const key of firstKeys)
      assert.match(
        second.log,
        new RegExp(`cache store: evicted ${key} \\(\\d+ bytes, least recently used\\) to stay within 500000 bytes`),
      );
    await assertNothingLeft(cluster);
  });
});
