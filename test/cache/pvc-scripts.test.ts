// Runs the PVC cache backend's in-pod commands for real (busybox sh with busybox applets, the host's dash with GNU tools), on a host dir standing in for the claim.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { sniffCompression } from "../../src/transfer/sniff-compression.js";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { hashCacheName } from "../../src/pod/pvc-layout.js";
import {
  parsePvcEvict,
  parsePvcList,
  parsePvcRestore,
  parsePvcSave,
  parsePvcTouch,
} from "../../src/cache/pvc-output.js";
import {
  buildPvcEvictCommand,
  buildPvcListCommand,
  buildPvcRestoreCommand,
  buildPvcSaveCommand,
  buildPvcTouchCommand,
  type PvcSaveInput,
} from "../../src/cache/pvc-scripts.js";
import { selectEntry } from "../../src/cache/select-entry.js";
import { CACHE_FLAVOURS, createCachePod, HAS_BWRAP, type CachePod } from "./pvc-sandbox.js";

const REPO = "did:plc:abc/knot";
const HOST_HAS_ZSTD = spawnSync("sh", ["-c", "command -v zstd"]).status === 0;
/** What a save in this sandbox compresses with: zstd where the image has it (the host's tools), else gzip (busybox). */
const compressorOf = (flavour: string): "zstd" | "gzip" => (flavour === "host" && HOST_HAS_ZSTD ? "zstd" : "gzip");

function saveInput(key: string, paths: readonly string[], extra: Partial<PvcSaveInput> = {}): PvcSaveInput {
  return { repo: REPO, key, paths, maxBytes: 1 << 30, createdAt: 1_767_312_000_000, nonce: "run-1", ...extra };
}

function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** Every file under a dir, relative path -> content. */
function readFiles(root: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(root)) return out;
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, readFiles(join(root, entry.name), rel));
    else out[rel] = readFileSync(join(root, entry.name), "utf8");
  }
  return out;
}

function entryFiles(claim: string, repo = REPO): string[] {
  const dir = join(claim, hashCacheName(repo));
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

async function list(pod: CachePod, repo = REPO) {
  return parsePvcList(await pod.exec(buildPvcListCommand(repo)), repo);
}

/** Sets a file's mtime `secondsAgo` in the past. */
function age(path: string, secondsAgo: number): void {
  const when = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(path, when, when);
}

for (const flavour of CACHE_FLAVOURS) {
  describe(
    `PVC cache commands under ${flavour === "host" ? "the host's sh and GNU tools" : "busybox sh"}`,
    { skip: HAS_BWRAP ? false : "bwrap is not installed" },
    () => {
      it("lists nothing on a claim never used, without failing", async () => {
        assert.deepEqual(await list(createCachePod(flavour)), []);
      });

      it("saves the paths under the key's hashed name and lists the entry with its bytes, sha256 and creation time", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "alpha\n", "deps/sub dir/b c.txt": "beta\n", "other/keep.txt": "x" });
        const saved = parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput("deps-1", ["/work/deps"]))));
        assert.equal(saved.kind, "saved");
        const stem = hashCacheName("deps-1");
        assert.deepEqual(entryFiles(pod.claim), [`${stem}.meta`, `${stem}.tar.gz`]);
        const archive = readFileSync(join(pod.claim, hashCacheName(REPO), `${stem}.tar.gz`));
        const sha256 = createHash("sha256").update(archive).digest("hex");
        assert.deepEqual(saved, { kind: "saved", bytes: archive.length, sha256 });
        const entries = await list(pod);
        assert.equal(entries.length, 1);
        const [entry] = entries;
        assert.deepEqual(
          { ...entry!, lastUsedAt: 0 },
          {
            repo: REPO,
            key: "deps-1",
            bytes: archive.length,
            sha256,
            compression: compressorOf(flavour),
            createdAt: 1_767_312_000_000,
            lastUsedAt: 0,
          },
        );
        assert.equal(
          sniffCompression(archive),
          compressorOf(flavour),
          "the archive's bytes are not what its metadata says",
        );
        assert.ok(entry!.lastUsedAt >= Date.now() - 60_000, "the last use is the save's time");
      });

      it("restores a saved entry into / byte for byte, in a pod that has none of the files", async () => {
        const first = createCachePod(flavour);
        writeFiles(first.work, {
          "deps/a.txt": "alpha\n",
          "deps/sub dir/b c.txt": "beta\n",
          "deps/bin.dat": Buffer.from([0, 1, 2, 255]).toString("latin1"),
        });
        const before = readFiles(join(first.work, "deps"));
        assert.equal(
          parsePvcSave(await first.exec(buildPvcSaveCommand(saveInput("deps-1", ["/work/deps"])))).kind,
          "saved",
        );
        const second = createCachePod(flavour, first.claim);
        const [entry] = await list(second);
        const restored = parsePvcRestore(await second.exec(buildPvcRestoreCommand(REPO, entry!.key, "run-2")));
        assert.deepEqual(restored, { kind: "restored", bytes: entry!.bytes });
        assert.deepEqual(readFiles(join(second.work, "deps")), before);
        assert.deepEqual(entryFiles(first.claim), entryFiles(second.claim), "no restore link is left behind");
        assert.equal(entryFiles(first.claim).length, 2);
      });

      it("restores the fallback entry selectEntry picks from the list", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/v.txt": "old" });
        await pod.exec(buildPvcSaveCommand(saveInput("deps-old", ["/work/deps"], { createdAt: 1000 })));
        writeFiles(pod.work, { "deps/v.txt": "new" });
        await pod.exec(buildPvcSaveCommand(saveInput("deps-new", ["/work/deps"], { createdAt: 2000 })));
        rmSync(join(pod.work, "deps"), { recursive: true });
        const lookup = selectEntry(await list(pod), { key: "deps-missing", restoreKeys: ["deps-"] });
        assert.equal(lookup.kind, "fallback");
        assert.equal(lookup.kind === "fallback" && lookup.entry.key, "deps-new");
        assert.equal(parsePvcRestore(await pod.exec(buildPvcRestoreCommand(REPO, "deps-new", "r"))).kind, "restored");
        assert.equal(readFileSync(join(pod.work, "deps/v.txt"), "utf8"), "new");
      });

      it("says missing for a key never saved", async () => {
        const pod = createCachePod(flavour);
        assert.deepEqual(parsePvcRestore(await pod.exec(buildPvcRestoreCommand(REPO, "nope", "r"))), {
          kind: "missing",
        });
      });

      it("a save of a key that exists says exists and leaves the entry as it was", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "first" });
        await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])));
        const archive = join(pod.claim, hashCacheName(REPO), `${hashCacheName("k")}.tar.gz`);
        const bytes = readFileSync(archive);
        writeFiles(pod.work, { "deps/a.txt": "second, longer" });
        assert.deepEqual(parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])))), {
          kind: "exists",
        });
        assert.deepEqual(readFileSync(archive), bytes);
        assert.equal(entryFiles(pod.claim).length, 2);
      });

      it("two concurrent saves of one key end as one saved and one exists, and the entry restores whole", async () => {
        for (let round = 0; round < 3; round++) {
          const a = createCachePod(flavour);
          const b = createCachePod(flavour, a.claim);
          // Different contents, so an entry mixing one save's archive with the other's metadata would be caught.
          writeFiles(a.work, { "deps/f.bin": "a".repeat(200_000 + round) });
          writeFiles(b.work, { "deps/f.bin": "b".repeat(300_000 + round) });
          const key = `race-${round}`;
          const outcomes = await Promise.all([
            a.exec(buildPvcSaveCommand(saveInput(key, ["/work/deps"], { nonce: "a" }))),
            b.exec(buildPvcSaveCommand(saveInput(key, ["/work/deps"], { nonce: "b" }))),
          ]);
          const kinds = outcomes.map((o) => parsePvcSave(o).kind).sort();
          assert.deepEqual(
            kinds,
            ["exists", "saved"],
            `round ${round}: ${outcomes.map((o) => o.stdout + o.stderr).join(" | ")}`,
          );
          const stem = hashCacheName(key);
          assert.deepEqual(entryFiles(a.claim), [`${stem}.meta`, `${stem}.tar.gz`], "no temporary file is left");
          const c = createCachePod(flavour, a.claim);
          assert.equal(parsePvcRestore(await c.exec(buildPvcRestoreCommand(REPO, key, "c"))).kind, "restored");
          const winner = outcomes.findIndex((o) => parsePvcSave(o).kind === "saved");
          assert.equal(
            readFileSync(join(c.work, "deps/f.bin"), "utf8"),
            (winner === 0 ? "a" : "b").repeat((winner === 0 ? 200_000 : 300_000) + round),
          );
        }
      });

      it("a corrupt archive is refused before anything is extracted, and the entry is removed", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "alpha".repeat(100) });
        await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])));
        const archive = join(pod.claim, hashCacheName(REPO), `${hashCacheName("k")}.tar.gz`);
        const bytes = readFileSync(archive);
        bytes[bytes.length - 12] = bytes[bytes.length - 12]! ^ 0xff; // inside the gzip trailer's CRC: gunzip alone would not stop tar first
        writeFileSync(archive, bytes);
        rmSync(join(pod.work, "deps"), { recursive: true });
        const restored = parsePvcRestore(await pod.exec(buildPvcRestoreCommand(REPO, "k", "r")));
        assert.equal(restored.kind, "corrupt");
        assert.match(restored.kind === "corrupt" ? restored.reason : "", /sha256 [0-9a-f]{64}.*the entry was removed/);
        assert.equal(existsSync(join(pod.work, "deps")), false, "nothing was extracted");
        assert.deepEqual(entryFiles(pod.claim), []);
        assert.deepEqual(await list(pod), []);
      });

      it("a truncated archive is corrupt too", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "alpha".repeat(1000) });
        await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])));
        const archive = join(pod.claim, hashCacheName(REPO), `${hashCacheName("k")}.tar.gz`);
        writeFileSync(archive, readFileSync(archive).subarray(0, 20));
        assert.equal(parsePvcRestore(await pod.exec(buildPvcRestoreCommand(REPO, "k", "r"))).kind, "corrupt");
        assert.deepEqual(entryFiles(pod.claim), []);
      });

      it("saves the paths that exist, and says empty when none does", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "a" });
        const saved = await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps", "/work/not-there"])));
        assert.equal(parsePvcSave(saved).kind, "saved");
        assert.match(saved.stderr, /\/work\/not-there does not exist/);
        assert.deepEqual(
          parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput("k2", ["/work/none", "/work/nada"])))),
          { kind: "empty" },
        );
        assert.equal(entryFiles(pod.claim).length, 2, "only the first entry");
      });

      it("an archive over the byte budget is not kept", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "a" });
        const outcome = parsePvcSave(
          await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"], { maxBytes: 10 }))),
        );
        assert.equal(outcome.kind, "too-large");
        assert.equal(outcome.kind === "too-large" && outcome.maxBytes, 10);
        assert.deepEqual(entryFiles(pod.claim), []);
      });

      it("touch and restore mark the entry used; touch of a missing key says missing", async () => {
        const pod = createCachePod(flavour);
        writeFiles(pod.work, { "deps/a.txt": "a" });
        await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"], { createdAt: 1000 })));
        const meta = join(pod.claim, hashCacheName(REPO), `${hashCacheName("k")}.meta`);
        age(meta, 86_400);
        assert.ok((await list(pod))[0]!.lastUsedAt < Date.now() - 86_000_000);
        assert.equal(parsePvcTouch(await pod.exec(buildPvcTouchCommand(REPO, "k"))), "touched");
        assert.ok((await list(pod))[0]!.lastUsedAt > Date.now() - 60_000);
        age(meta, 86_400);
        await pod.exec(buildPvcRestoreCommand(REPO, "k", "r"));
        assert.ok((await list(pod))[0]!.lastUsedAt > Date.now() - 60_000);
        assert.equal(parsePvcTouch(await pod.exec(buildPvcTouchCommand(REPO, "nope"))), "missing");
      });

      it("evict removes the least recently used entries of every repository until the rest fit, and sweeps dead temporary files", async () => {
        const pod = createCachePod(flavour);
        const sizes: Record<string, number> = {};
        for (const [repo, key, agoSeconds] of [
          [REPO, "oldest", 3000],
          ["other/repo", "middle", 2000],
          [REPO, "newest", 1000],
        ] as const) {
          writeFiles(pod.work, { "deps/f.txt": `${key} `.repeat(500) });
          const saved = parsePvcSave(await pod.exec(buildPvcSaveCommand({ ...saveInput(key, ["/work/deps"]), repo })));
          sizes[key] = saved.kind === "saved" ? saved.bytes : -1;
          age(join(pod.claim, hashCacheName(repo), `${hashCacheName(key)}.meta`), agoSeconds);
        }
        const dir = join(pod.claim, hashCacheName(REPO));
        writeFileSync(join(dir, ".tmp-dead-x-1.tar.gz"), "dead");
        age(join(dir, ".tmp-dead-x-1.tar.gz"), 7200);
        writeFileSync(join(dir, ".tmp-live-y-2.tar.gz"), "live");
        writeFileSync(join(dir, `${hashCacheName("orphan")}.tar.gz`), "orphan");
        age(join(dir, `${hashCacheName("orphan")}.tar.gz`), 600);
        const budget = sizes.newest! + sizes.middle! - 1;
        const evicted = parsePvcEvict(await pod.exec(buildPvcEvictCommand(budget, "e")));
        assert.deepEqual(evicted, { evicted: 2, freedBytes: sizes.oldest! + sizes.middle!, keptBytes: sizes.newest! });
        assert.deepEqual(
          (await list(pod)).map((e) => e.key),
          ["newest"],
        );
        assert.deepEqual(await list(pod, "other/repo"), []);
        assert.deepEqual(
          readdirSync(dir).filter((f) => f.startsWith(".")),
          [".tmp-live-y-2.tar.gz"],
        );
        assert.equal(existsSync(join(dir, `${hashCacheName("orphan")}.tar.gz`)), false);
        assert.deepEqual(
          readdirSync(pod.claim).filter((f) => f.startsWith(".")),
          [],
          "its own list file is gone",
        );
        assert.deepEqual(parsePvcEvict(await pod.exec(buildPvcEvictCommand(budget, "e"))), {
          evicted: 0,
          freedBytes: 0,
          keptBytes: sizes.newest!,
        });
      });

      it("a save replaces an archive a dead save left without metadata, but not one a live save is committing", async () => {
        const pod = createCachePod(flavour);
        const dir = join(pod.claim, hashCacheName(REPO));
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, `${hashCacheName("k")}.tar.gz`), "left by a dead save");
        writeFiles(pod.work, { "deps/a.txt": "a" });
        assert.deepEqual(
          parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])))),
          { kind: "exists" },
          "a fresh orphan may be a save in flight",
        );
        age(join(dir, `${hashCacheName("k")}.tar.gz`), 600);
        assert.equal(parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput("k", ["/work/deps"])))).kind, "saved");
        rmSync(join(pod.work, "deps"), { recursive: true });
        assert.equal(parsePvcRestore(await pod.exec(buildPvcRestoreCommand(REPO, "k", "r"))).kind, "restored");
        assert.equal(readFileSync(join(pod.work, "deps/a.txt"), "utf8"), "a");
      });

      it("keys with quotes, dollars, spaces and non-ASCII reach the metadata as they are", async () => {
        const pod = createCachePod(flavour);
        const key = `it's "$HOME" \`x\` ü ${"\\"}n *`;
        writeFiles(pod.work, { "deps/a.txt": "a" });
        assert.equal(parsePvcSave(await pod.exec(buildPvcSaveCommand(saveInput(key, ["/work/deps"])))).kind, "saved");
        assert.deepEqual(
          (await list(pod)).map((e) => e.key),
          [key],
        );
        assert.ok(statSync(join(pod.claim, hashCacheName(REPO), `${hashCacheName(key)}.meta`)).isFile());
      });
    },
  );
}

describe(
  "a zstd entry on the claim restored in a busybox pod (no zstd)",
  {
    skip:
      HAS_BWRAP && CACHE_FLAVOURS.includes("busybox") && HOST_HAS_ZSTD
        ? false
        : "needs bwrap, busybox and the host's zstd",
  },
  () => {
    it("says no-decoder at once, extracts nothing and leaves the entry for images that have zstd", async () => {
      const debian = createCachePod("host");
      writeFiles(debian.work, { "deps/a.txt": "alpha\n" });
      assert.equal(
        parsePvcSave(await debian.exec(buildPvcSaveCommand(saveInput("deps-1", ["/work/deps"])))).kind,
        "saved",
      );
      const busybox = createCachePod("busybox", debian.claim);
      const [entry] = await list(busybox);
      assert.equal(entry!.compression, "zstd");
      assert.deepEqual(parsePvcRestore(await busybox.exec(buildPvcRestoreCommand(REPO, entry!.key, "run-2"))), {
        kind: "no-decoder",
        compression: "zstd",
      });
      assert.equal(existsSync(join(busybox.work, "deps")), false);
      assert.equal(entryFiles(debian.claim).length, 2, "the entry was removed");
    });
  },
);
