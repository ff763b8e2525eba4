// Caches and artifacts end to end through the library, the API transport and podman pods (busybox and Debian): what moves, what is refused, what never fails a run.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import type { ArtifactSpec } from "../../src/workflow/artifact-types.js";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import { createHostCacheDriver, type HostCacheDriverOptions } from "../../src/cache/host-cache-driver.js";
import type { CacheSpec, CacheStore } from "../../src/workflow/cache-types.js";
import type { RunEvent } from "../../src/events/run-events.js";
import { MemoryCacheStore } from "../cache/memory-store.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { runWithKubectl, type LibraryRun } from "../support/run-library.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const hasDebian = spawnSync("podman", ["image", "exists", DEBIAN_IMAGE], { stdio: "ignore" }).status === 0;
const REPO = "e2e/repo";

/** A step that makes the cache's paths unless they came back, then proves what it found: 2 MB of random bytes and a symlink. */
const BUILD_DEPS = [
  "deps\tif [ -f /work/deps/blob ]; then echo restored $(cat /work/deps/stamp); else mkdir -p /work/deps/sub && head -c 2000000 /dev/urandom > /work/deps/blob && date +%s%N > /work/deps/stamp && ln -s ../blob /work/deps/sub/link && echo built; fi",
  "sum\tsha256sum /work/deps/blob | cut -c1-64 > /outputs/blob.sha256 && cat /work/deps/sub/link > /dev/null && echo ok",
].join("\n");

const DEPS: CacheSpec = { key: "deps-v1", restoreKeys: ["deps-"], paths: ["/work/deps", "/root/.absent-cache"] };

/** A memory store whose first `count` lookups wait for one another: runs restoring at once have all looked before any saves. */
class LookupBarrierStore extends MemoryCacheStore {
  #waiting = 0;
  #open!: () => void;
  readonly #opened = new Promise<void>((resolve) => (this.#open = resolve));
  constructor(private readonly count: number) {
    super();
  }
  override async lookup(
    repo: string,
    spec: Pick<CacheSpec, "key" | "restoreKeys">,
  ): ReturnType<MemoryCacheStore["lookup"]> {
    if (++this.#waiting >= this.count) this.#open();
    await this.#opened;
    return super.lookup(repo, spec);
  }
}

function eventsOf<K extends RunEvent["kind"]>(run: LibraryRun, kind: K): Array<Extract<RunEvent, { kind: K }>> {
  return run.events.filter((event): event is Extract<RunEvent, { kind: K }> => event.kind === kind);
}

describe("caches and artifacts on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  let runs = 0;
  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  /** The run's gate is the CLI's: createArchiveGate with the cache's paths as roots, unless the test watches it. */
  const realGate: HostCacheDriverOptions["createGate"] = (spec, compression, output) =>
    createArchiveGate(compression, { roots: spec.paths, output });
  const run = (
    store: CacheStore,
    steps: string,
    overrides: Parameters<typeof runWithKubectl>[0]["overrides"],
    createGate: HostCacheDriverOptions["createGate"] = realGate,
  ) =>
    runWithKubectl({
      kubectlPath: KUBECTL,
      transport: "api",
      env: {},
      kubeconfig: cluster.kubeconfigPath,
      steps,
      runId: `cache-${process.pid}-${++runs}`,
      overrides: { cacheBackend: { kind: "dir", repo: REPO, dir: "/unused", maxBytes: 1 << 30 }, ...overrides },
      cacheDriver: (executor) =>
        createHostCacheDriver({ store, repo: REPO, executor, createGate, description: "memory" }),
    });

  for (const image of ["busybox:1.36", ...(hasDebian ? [DEBIAN_IMAGE] : [])]) {
    const compression = image === DEBIAN_IMAGE ? "zstd" : "gzip";
    it(`misses, saves as ${compression}, then hits exactly with the same bytes on the next run (${image})`, async () => {
      const store = new MemoryCacheStore();
      const first = await run(store, BUILD_DEPS, { image, caches: [DEPS] });
      assert.equal(first.result.status, "success", first.result.error ?? "");
      assert.match(first.output(0), /^built/);
      assert.deepEqual(
        first.result.caches.map((c) => [c.restore.status, c.save.status]),
        [["miss", "saved"]],
      );
      assert.ok(first.result.caches[0]!.save.bytes > 1_900_000, "2 MB of random bytes do not compress");
      assert.deepEqual(store.keys(REPO), ["deps-v1"]);
      const saved = await store.lookup(REPO, { key: "deps-v1", restoreKeys: [] });
      assert.equal(saved.kind === "exact" && saved.entry.compression, compression, "the stored entry's compression");
      const sum = readFileSync(join(first.out, "outputs", "blob.sha256"), "utf8");

      const second = await run(store, BUILD_DEPS, { image, caches: [DEPS] });
      assert.equal(second.result.status, "success", second.result.error ?? "");
      assert.equal(second.result.caches[0]!.restore.status, "exact", second.result.caches[0]!.restore.reason ?? "");
      assert.match(second.output(0), /^restored /);
      assert.equal(readFileSync(join(second.out, "outputs", "blob.sha256"), "utf8"), sum);
      const report = second.result.caches[0]!;
      assert.equal(report.restore.status, "exact");
      assert.equal(report.restore.bytes, store.get(REPO, "deps-v1")!.length);
      assert.equal(report.save.status, "skipped");
      assert.ok(eventsOf(second, "cache-restore")[0]!.durationMs > 0);
      if (image === DEBIAN_IMAGE) {
        // The image changed under the key: busybox has no zstd, so the entry goes again as the plain tar it decodes to.
        const gates: string[] = [];
        const gate: HostCacheDriverOptions["createGate"] = (spec, stored, output) => (
          gates.push(`${stored} ${output}`),
          createArchiveGate(stored, { roots: spec.paths, output })
        );
        const third = await run(store, BUILD_DEPS, { image: "busybox:1.36", caches: [DEPS] }, gate);
        assert.equal(third.result.status, "success", third.result.error ?? "");
        assert.equal(third.result.caches[0]!.restore.status, "exact", third.result.caches[0]!.restore.reason ?? "");
        assert.match(third.output(0), /^restored /);
        assert.equal(readFileSync(join(third.out, "outputs", "blob.sha256"), "utf8"), sum);
        assert.deepEqual(gates, ["zstd archive", "zstd tar"]);
      }
      await assertNothingLeft(cluster);
    });
  }

  it("restores by a fallback prefix, names the key it restored, and saves the new key", async () => {
    const store = new MemoryCacheStore();
    await run(store, BUILD_DEPS, { caches: [DEPS] });
    const next = await run(store, BUILD_DEPS, { caches: [{ ...DEPS, key: "deps-v2" }] });
    assert.equal(next.result.status, "success");
    assert.match(next.output(0), /^restored /);
    assert.deepEqual(next.result.caches[0]!.restore.status, "fallback");
    assert.equal(next.result.caches[0]!.restore.restoredKey, "deps-v1");
    assert.equal(next.result.caches[0]!.save.status, "saved");
    assert.deepEqual(store.keys(REPO), ["deps-v1", "deps-v2"]);
  });

  it("lets two runs save the same key at once: one saves it, the other says it exists, the store holds one whole entry", async () => {
    // Both look the key up (a miss) before either saves, however far apart their pods start.
    const store = new LookupBarrierStore(2);
    const [a, b] = await Promise.all([
      run(store, BUILD_DEPS, { caches: [DEPS] }),
      run(store, BUILD_DEPS, { caches: [DEPS] }),
    ]);
    assert.equal(a.result.status, "success");
    assert.equal(b.result.status, "success");
    assert.deepEqual([a.result.caches[0]!.save.status, b.result.caches[0]!.save.status].sort(), ["exists", "saved"]);
    const third = await run(store, BUILD_DEPS, { caches: [DEPS] });
    assert.equal(third.result.caches[0]!.restore.status, "exact");
    assert.match(third.output(0), /^restored /);
  });

  it("takes a corrupt entry as a warning: the restore fails, nothing half-restored is left, the run builds afresh and succeeds", async () => {
    const store = new MemoryCacheStore();
    await run(store, BUILD_DEPS, { caches: [DEPS] });
    const saved = store.get(REPO, "deps-v1")!;
    const flipped = Buffer.from(saved);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    store.corrupt(REPO, "deps-v1", flipped);
    const next = await run(store, BUILD_DEPS, { caches: [DEPS] });
    assert.equal(next.result.status, "success", next.result.error ?? "");
    assert.match(next.output(0), /^built/, "the step found no half-restored /work/deps");
    assert.equal(next.result.caches[0]!.restore.status, "failed");
    assert.match(next.result.caches[0]!.restore.reason ?? "", /corrupt|could not extract/);
    assert.ok(next.events.some((e) => e.kind === "cache-restore" && e.status === "failed"));
    assert.equal(
      next.result.caches[0]!.save.status,
      "saved",
      "the store removed the corrupt entry, so the fresh one is saved",
    );
  });

  const ARTIFACT_STEPS = [
    "make\tmkdir -p /work/dist/sub && echo a > /work/dist/a.js && echo b > /work/dist/sub/b.js && echo m > /work/dist/a.js.map && echo r > /outputs/report.txt",
    "fail\techo failing; exit 3",
  ].join("\n");

  it("collects a failure artifact from a run whose step failed, warns of one that matched nothing, and keeps the step's exit code", async () => {
    const store = new MemoryCacheStore();
    const artifacts: ArtifactSpec[] = [
      { name: "dist", paths: ["dist/**/*.js"], when: "failure", required: false },
      { name: "logs", paths: ["/outputs/*.log"], when: "always", required: false },
      { name: "release", paths: ["dist/**"], when: "success", required: true },
    ];
    const failed = await run(store, ARTIFACT_STEPS, { artifacts });
    assert.equal(failed.result.status, "failed");
    assert.equal(failed.result.exitCode, 3);
    assert.deepEqual(
      failed.result.artifacts.map((a) => [a.name, a.status]),
      [
        ["dist", "collected"],
        ["logs", "empty"],
        ["release", "skipped"],
      ],
    );
    const dist = failed.result.artifacts[0]!;
    assert.deepEqual(
      dist.files.map((f) => f.path),
      ["a.js", "sub/b.js"],
    );
    assert.equal(dist.files[0]!.sha256, createHash("sha256").update("a\n").digest("hex"));
    assert.equal(readFileSync(join(failed.out, "artifacts", "dist", "sub", "b.js"), "utf8"), "b\n");
    assert.equal(existsSync(join(failed.out, "artifacts", "dist", "a.js.map")), false);
    assert.deepEqual(
      JSON.parse(readFileSync(join(failed.out, "artifacts", "dist.manifest.json"), "utf8")).files,
      dist.files,
    );
    assert.ok(failed.events.some((e) => e.kind === "artifact" && e.name === "logs" && e.status === "empty"));
    await assertNothingLeft(cluster);
  });

  it("fails a successful run whose required artifact matched nothing, with a clear error", async () => {
    const store = new MemoryCacheStore();
    const done = await run(store, "make\techo nothing to see", {
      artifacts: [{ name: "release", paths: ["dist/**"], when: "success", required: true }],
    });
    assert.equal(done.result.status, "failed");
    assert.equal(done.result.errorReason, "artifact-missing");
    assert.match(done.result.error ?? "", /required artifact not collected: release/);
  });

  if (hasDebian) {
    it(`packs exactly the matched artifact files with GNU tar's list too (${DEBIAN_IMAGE})`, async () => {
      const store = new MemoryCacheStore();
      const done = await run(store, ARTIFACT_STEPS.split("\n")[0]!, {
        image: DEBIAN_IMAGE,
        artifacts: [
          { name: "dist", paths: ["dist/**", "!**/*.map", "/outputs/report.txt"], when: "success", required: false },
        ],
      });
      assert.equal(done.result.status, "success", done.result.error ?? "");
      assert.deepEqual(
        done.result.artifacts[0]!.files.map((f) => f.path),
        ["outputs/report.txt", "work/dist/a.js", "work/dist/sub/b.js"],
      );
    });
  }
});
