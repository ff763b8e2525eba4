// Tests the cache's moves through the scripted kubectl: what the pod is asked, what proves a restore, when a save is committed.
import assert from "node:assert/strict";
import { PassThrough, Readable, Writable } from "node:stream";
import type { RunCluster } from "../../../src/cluster/cluster.js";
import type { ExecEnd, ExecSession } from "../../../src/cluster/exec.js";
import { describe, it } from "node:test";
import { CacheCorruptError, CacheDecoderMissingError, type CacheSpec } from "../../../src/workflow/cache-types.js";
import { CancelledError } from "../../../src/core/errors.js";
import { restoreCacheArchive, saveCacheArchive } from "../../../src/executor/kubernetes/cache-transfer.js";
import { CacheTransferError } from "../../../src/executor/cache-archive.js";
import { MemoryCacheStore } from "../../cache/memory-store.js";
import { createArchiveGate } from "../../../src/cache/archive-gate.js";
import { randomBytes } from "node:crypto";
import { constants, gzipSync, gunzipSync } from "node:zlib";
import * as tarStream from "tar-stream";
import { NODE_NAME, POD_NAME } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";

const POD = { name: POD_NAME, node: NODE_NAME };
const SPEC: CacheSpec = { key: "deps-1", restoreKeys: [], paths: ["/work/node_modules", "/root/.npm"] };
const ARCHIVE = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
const REPO = "repo";

/** What the pod's cache-save sends, as far as the save looks: gzip's first bytes, then anything. */
const GZIP_ARCHIVE = Buffer.concat([Buffer.from([0x1f, 0x8b]), ARCHIVE]);
const ZSTD_ARCHIVE = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), ARCHIVE]);

type Member = { name: string; content?: string; type?: "file" | "directory" | "symlink"; linkname?: string };

/** A gzip'd tar as the pod's cache-save makes it, built with tar-stream. */
async function buildGzipTar(members: readonly Member[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const m of members) {
    if (m.type === "directory") pack.entry({ name: m.name, type: "directory", mode: 0o755 });
    else if (m.type === "symlink") pack.entry({ name: m.name, type: "symlink", linkname: m.linkname });
    else pack.entry({ name: m.name, mode: 0o644 }, m.content ?? "");
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks), { level: 1 });
}

/** Text that does not compress, so an archive of it spans many chunks. */
function randomText(length: number): string {
  return randomBytes(length).toString("base64").slice(0, length);
}

/** The bytes in chunks of 16 KiB, one per turn of the event loop, as a file is read. */
function archiveStream(bytes: Buffer, fail?: Error): Readable {
  if (!fail && bytes.length > 16_384) {
    const out = new PassThrough();
    let at = 0;
    const feed = (): void => {
      if (at >= bytes.length) return void out.end();
      const piece = bytes.subarray(at, (at += 16_384));
      if (out.write(piece)) setImmediate(feed);
      else out.once("drain", feed);
    };
    setImmediate(feed);
    return out;
  }
  const out = new PassThrough();
  setImmediate(() => {
    out.write(bytes);
    if (fail) setImmediate(() => out.destroy(fail));
    else out.end();
  });
  return out;
}

describe("restoreCacheArchive", () => {
  it("streams the archive into cache-restore with the paths relative to / and returns the bytes once the pod confirms", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "knotless-cache-restored\n" });
    const moved = await restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE), compression: "gzip" });
    assert.equal(moved.bytes, ARCHIVE.length);
    assert.deepEqual(kubectl.calls[0]!.command, [
      "exec",
      "-i",
      POD_NAME,
      "-c",
      "run",
      "--",
      "sh",
      "/knotless/helper.sh",
      "cache-restore",
      "gzip",
      "work/node_modules",
      "root/.npm",
    ]);
    assert.ok(kubectl.calls[0]!.stdinBytes?.equals(ARCHIVE));
  });

  it("fails, naming gunzip's and tar's codes, when the pod could not extract the archive", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", {
      stdout: "knotless-cache-failed gunzip=1 tar=0\n",
      exitCode: 1,
      stderr: "gunzip: unexpected end of file\ncommand terminated with exit code 1\n",
    });
    await assert.rejects(
      restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE), compression: "gzip" }),
      (error: unknown) => {
        assert.ok(error instanceof CacheTransferError);
        assert.match(error.message, /could not extract the archive \(gunzip=1 tar=0\)/);
        assert.equal(error.entryFault, undefined);
        return true;
      },
    );
  });

  it("does not take an exec that ended 0 without the pod's last line for a restore", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "" });
    await assert.rejects(
      restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE), compression: "gzip" }),
      /did not confirm the restore/,
    );
  });

  it("reports a store stream that fails its checksum as a corrupt entry, even when the pod extracted what it got", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "knotless-cache-restored\n" });
    const corrupt = new CacheCorruptError("entry deps-1: sha256 mismatch");
    await assert.rejects(
      restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE, corrupt), compression: "gzip" }),
      (error: unknown) => {
        assert.ok(error instanceof CacheTransferError);
        assert.equal(error.entryFault, "corrupt");
        assert.match(error.message, /corrupt: entry deps-1: sha256 mismatch/);
        return true;
      },
    );
  });

  it("passes a sound entry through the host's gate whole, and succeeds", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "knotless-cache-restored\n" });
    const archive = await buildGzipTar([
      { name: "work/node_modules/", type: "directory" },
      { name: "work/node_modules/a.js", content: "x".repeat(100_000) },
    ]);
    await restoreCacheArchive(
      ctx,
      POD,
      SPEC,
      { stream: archiveStream(archive), compression: "gzip" },
      createArchiveGate("gzip", { roots: SPEC.paths }),
    );
    assert.ok(kubectl.calls[0]!.stdinBytes?.equals(archive));
  });

  it("cuts the pod's stream where the host's gate refused a member, before the pod gets it whole, and fails naming it", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "knotless-cache-failed gunzip=1 tar=0\n", exitCode: 1 });
    const archive = await buildGzipTar([
      { name: "work/node_modules/a.js", content: randomText(400_000) },
      { name: "work/node_modules/evil", type: "symlink", linkname: "../../../etc/passwd" },
      { name: "work/node_modules/b.js", content: randomText(400_000) },
    ]);
    await assert.rejects(
      restoreCacheArchive(
        ctx,
        POD,
        SPEC,
        { stream: archiveStream(archive), compression: "gzip" },
        createArchiveGate("gzip", { roots: SPEC.paths }),
      ),
      (error: unknown) => {
        assert.ok(error instanceof CacheTransferError);
        assert.match(
          error.message,
          /refused on this host: .*work\/node_modules\/evil.*; the pod removed what it extracted/,
        );
        assert.equal(error.entryFault, "refused", "the driver removes an entry only when told it was refused");
        return true;
      },
    );
    const got = kubectl.calls[0]!.stdinBytes ?? Buffer.alloc(0);
    assert.ok(got.length < archive.length, "the pod got the whole archive");
    assert.ok(
      !gunzipSync(got, { finishFlush: constants.Z_SYNC_FLUSH }).includes("../../../etc/passwd"),
      "the pod got the refused member's header",
    );
  });

  it("refuses paths of the runner's own, without an exec", async () => {
    const { ctx, kubectl } = buildTestContext();
    await assert.rejects(
      restoreCacheArchive(
        ctx,
        POD,
        { ...SPEC, paths: ["/knotless-secrets"] },
        { stream: archiveStream(ARCHIVE), compression: "gzip" },
      ),
      /runner's/,
    );
    await assert.rejects(
      restoreCacheArchive(
        ctx,
        POD,
        { ...SPEC, paths: ["/knotless/helper.sh"] },
        { stream: archiveStream(ARCHIVE), compression: "gzip" },
      ),
      /runner's/,
    );
    assert.equal(kubectl.calls.length, 0);
  });

  it("says the pod lacks zstd (CacheDecoderMissingError) when it answers so at once, and names the entry's compression in the command", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: "knotless-cache-no-decoder zstd\n" });
    await assert.rejects(
      restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE), compression: "zstd" }),
      (error: unknown) => error instanceof CacheDecoderMissingError && error.compression === "zstd",
    );
    assert.deepEqual(kubectl.calls[0]!.command.slice(-4), ["cache-restore", "zstd", "work/node_modules", "root/.npm"]);
  });

  it("ends stdin as soon as the pod says it lacks zstd, without sending the rest of the entry", async () => {
    // The pod then reads stdin to its end (src/pod/cache-script.ts): the exec ends once stdin does.
    const { ctx } = buildTestContext();
    let received = 0;
    let finished!: () => void;
    const stdinEnded = new Promise<void>((resolve) => (finished = resolve));
    const stdout = new PassThrough();
    const stdin = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        setImmediate(callback); // a socket takes each chunk a turn later
      },
      final(callback) {
        finished();
        callback();
      },
    });
    const exec = async (): Promise<ExecSession> => {
      setImmediate(() => stdout.write("knotless-cache-no-decoder zstd\n"));
      const ended = stdinEnded.then(
        (): ExecEnd => (stdout.end(), { kind: "exit", code: 0, tags: "", stderr: "", how: "exit status 0" }),
      );
      return { stdout, stdin, ended, kill: () => undefined };
    };
    const big = Readable.from(
      (function* () {
        for (let i = 0; i < 4096; i++) yield Buffer.alloc(16_384, i);
      })(),
    );
    await assert.rejects(
      restoreCacheArchive({ ...ctx, cluster: { ...ctx.cluster, exec } as RunCluster }, POD, SPEC, {
        stream: big,
        compression: "zstd",
      }),
      CacheDecoderMissingError,
    );
    assert.ok(received < 8 * 1024 * 1024, `${received} of 64 MiB sent`);
  });

  it("rejects with CancelledError when the run is cancelled during the restore", async () => {
    const { ctx, kubectl, cancel } = buildTestContext();
    kubectl.on("exec", () => {
      setImmediate(cancel);
      return { hang: true };
    });
    await assert.rejects(
      restoreCacheArchive(ctx, POD, SPEC, { stream: archiveStream(ARCHIVE), compression: "gzip" }),
      CancelledError,
    );
  });
});

describe("saveCacheArchive", () => {
  async function setUp(reply: Parameters<ReturnType<typeof buildTestContext>["kubectl"]["on"]>[1]) {
    const test = buildTestContext();
    test.kubectl.on("exec", reply);
    const store = new MemoryCacheStore();
    const writer = await store.beginSave(REPO, SPEC.key, "gzip");
    assert.notEqual(writer, "exists");
    if (writer === "exists") throw new Error("unreachable");
    return { ...test, store, writer };
  }

  async function storedCompression(store: MemoryCacheStore): Promise<string | false> {
    const found = await store.lookup(REPO, { key: SPEC.key, restoreKeys: [] });
    return found.kind === "exact" && found.entry.compression;
  }

  it("streams the pod's archive into the writer and commits it, gzip as its first bytes say, when all went well", async () => {
    const { ctx, kubectl, store, writer } = await setUp({
      stdout: [GZIP_ARCHIVE.subarray(0, 1), GZIP_ARCHIVE.subarray(1, 1000), GZIP_ARCHIVE.subarray(1000)],
      stderr: "knotless-cache-missing root/.npm\nknotless-cache-saved tar=0 gzip=0\n",
    });
    const saved = await saveCacheArchive(ctx, POD, SPEC, writer);
    assert.deepEqual(saved, { status: "saved", bytes: GZIP_ARCHIVE.length, missing: ["/root/.npm"] });
    assert.deepEqual(kubectl.calls[0]!.command, [
      "exec",
      POD_NAME,
      "-c",
      "run",
      "--",
      "sh",
      "/knotless/helper.sh",
      "cache-save",
      "work/node_modules",
      "root/.npm",
    ]);
    assert.ok(store.get(REPO, SPEC.key)?.equals(GZIP_ARCHIVE));
    assert.equal(await storedCompression(store), "gzip");
  });

  it("records the compression the archive's bytes show, not the one the pod named", async () => {
    const { ctx, store, writer } = await setUp({
      stdout: [ZSTD_ARCHIVE.subarray(0, 2), ZSTD_ARCHIVE.subarray(2)],
      stderr: "knotless-cache-saved tar=0 gzip=0\n",
    });
    assert.equal((await saveCacheArchive(ctx, POD, SPEC, writer)).status, "saved");
    assert.equal(await storedCompression(store), "zstd");
  });

  it("stores nothing when the archive's first bytes are neither gzip's nor zstd's, or there are none", async () => {
    for (const [stdout, said] of [
      [ARCHIVE, /refused, nothing stored: it starts with 00010203, neither gzip \(1f8b\) nor zstd \(28b52ffd\)/],
      [Buffer.alloc(0), /refused, nothing stored: the archive is empty/],
    ] as const) {
      const { ctx, store, writer } = await setUp({ stdout, stderr: "knotless-cache-saved tar=0 zstd=0\n" });
      await assert.rejects(saveCacheArchive(ctx, POD, SPEC, writer), said);
      assert.equal(store.get(REPO, SPEC.key), undefined);
      assert.ok(store.calls.includes(`abort ${REPO} ${SPEC.key}`));
    }
  });

  it("stores a hostile archive as the pod packed it: judging it is the restore gate's, on every way in", async () => {
    const hostile = await buildGzipTar([
      { name: "work/node_modules/evil", type: "symlink", linkname: "../../../etc/passwd" },
    ]);
    const { ctx, store, writer } = await setUp({ stdout: hostile, stderr: "knotless-cache-saved tar=0 gzip=0\n" });
    assert.equal((await saveCacheArchive(ctx, POD, SPEC, writer)).status, "saved");
    assert.ok(store.get(REPO, SPEC.key)?.equals(hostile));
  });

  it("stores nothing when the pod's tar failed, even though kubectl exited 0", async () => {
    const { ctx, store, writer } = await setUp({
      stdout: GZIP_ARCHIVE.subarray(0, 100),
      stderr: "tar: work/node_modules/x: Permission denied\nknotless-cache-saved tar=2 gzip=0\n",
    });
    await assert.rejects(
      saveCacheArchive(ctx, POD, SPEC, writer),
      /tar exited 2, gzip 0\): tar: work\/node_modules\/x: Permission denied/,
    );
    assert.equal(store.get(REPO, SPEC.key), undefined);
  });

  it("stores nothing when the exec ended without the pod's status line (the stream was cut)", async () => {
    const { ctx, store, writer } = await setUp({ stdout: GZIP_ARCHIVE.subarray(0, 100) });
    await assert.rejects(saveCacheArchive(ctx, POD, SPEC, writer), /did not confirm the save/);
    assert.equal(store.get(REPO, SPEC.key), undefined);
  });

  it("stores nothing when kubectl failed", async () => {
    const { ctx, store, writer } = await setUp({
      stdout: GZIP_ARCHIVE.subarray(0, 100),
      exitCode: 1,
      stderr: "error: unable to upgrade connection: container not found\n",
    });
    await assert.rejects(saveCacheArchive(ctx, POD, SPEC, writer), /kubectl exit 1/);
    assert.equal(store.get(REPO, SPEC.key), undefined);
  });

  it("says nothing was there to save when no path exists in the pod, and stores nothing", async () => {
    const { ctx, store, writer } = await setUp({
      stderr: "knotless-cache-missing work/node_modules\nknotless-cache-missing root/.npm\nknotless-cache-saved none\n",
    });
    assert.deepEqual(await saveCacheArchive(ctx, POD, SPEC, writer), {
      status: "nothing",
      missing: ["/work/node_modules", "/root/.npm"],
    });
    assert.equal(store.get(REPO, SPEC.key), undefined);
  });

  it("says exists when another run committed the key while this one packed", async () => {
    const { ctx, store, writer } = await setUp({ stdout: GZIP_ARCHIVE, stderr: "knotless-cache-saved tar=0 gzip=0\n" });
    store.put(REPO, SPEC.key, Buffer.from("the other run's"));
    assert.equal((await saveCacheArchive(ctx, POD, SPEC, writer)).status, "exists");
    assert.equal(store.get(REPO, SPEC.key)?.toString(), "the other run's");
  });

  it("refuses to save the secrets' directory, before any exec", async () => {
    const { ctx, kubectl, store, writer } = await setUp({ stdout: GZIP_ARCHIVE });
    await assert.rejects(saveCacheArchive(ctx, POD, { ...SPEC, paths: ["/knotless-secrets/env"] }, writer), /runner's/);
    assert.equal(kubectl.calls.length, 0);
    assert.equal(store.get(REPO, SPEC.key), undefined);
  });

  it("rejects with CancelledError, and stores nothing, when the run is cancelled during the save", async () => {
    const { ctx, store, writer, cancel } = await setUp(() => {
      setImmediate(cancel);
      return { hang: true };
    });
    await assert.rejects(saveCacheArchive(ctx, POD, SPEC, writer), CancelledError);
    assert.equal(store.get(REPO, SPEC.key), undefined);
    assert.ok(store.calls.includes(`abort ${REPO} ${SPEC.key}`));
  });
});
