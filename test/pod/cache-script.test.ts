// The helper's cache and artifact subcommands in a sandbox, under the host's sh with GNU tar, gzip and zstd (as in Debian images) and under busybox alone (gzip, no zstd).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { gunzipSync } from "node:zlib";
import {
  CACHE_RESTORED_TAG,
  checkCacheRestoreReply,
  findMissingDecoder,
  parseCacheSaveStatus,
  parseFilesPacked,
} from "../../src/pod/cache-script.js";
import { sniffCompression } from "../../src/transfer/sniff-compression.js";
import { readArchiveNames } from "../support/tar-names.js";
import { extractOutputs } from "../../src/transfer/extract-outputs.js";
import { FLAVOURS, FLAVOUR_TITLES, HAS_BWRAP, createPod, type Flavour } from "./helper-pod.js";

const SANDBOXES = FLAVOURS.filter((flavour): flavour is Flavour => flavour !== "bash");
const HOST_HAS_ZSTD = spawnSync("sh", ["-c", "command -v zstd"]).status === 0;

/** What a save in this sandbox compresses with: zstd where the image has it (the host's tools), else gzip (busybox). */
function compressorOf(flavour: Flavour): "zstd" | "gzip" {
  return flavour === "host" && HOST_HAS_ZSTD ? "zstd" : "gzip";
}

function decompress(archive: Buffer): Buffer {
  if (sniffCompression(archive) === "gzip") return gunzipSync(archive);
  return spawnSync("zstd", ["-dc"], { input: archive, maxBuffer: 64 * 1024 * 1024 }).stdout;
}

for (const flavour of SANDBOXES) {
  describe(
    `cache subcommands under ${FLAVOUR_TITLES[flavour]}`,
    { skip: HAS_BWRAP ? false : "bwrap is not available" },
    () => {
      it(`cache-save packs the paths that exist as ${compressorOf(flavour)}, names the missing ones, and cache-restore puts them back in another pod`, async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "deps", "sub"), { recursive: true });
        writeFileSync(join(pod.work, "deps", "sub", "a.txt"), "alpha\n");
        writeFileSync(join(pod.work, "tool"), "#!/bin/sh\n", { mode: 0o755 });
        symlinkSync("sub/a.txt", join(pod.work, "deps", "link"));
        const saved = await pod.helper(["cache-save", "work/deps", "work/absent", "work/tool"]);
        assert.equal(saved.code, 0, saved.stderr);
        const status = parseCacheSaveStatus(saved.stderr);
        assert.deepEqual(status.missing, ["/work/absent"]);
        const compression = compressorOf(flavour);
        assert.deepEqual(status.outcome, { kind: "packed", tar: "0", compressor: compression, status: "0" });
        assert.equal(sniffCompression(saved.stdout), compression, "the first bytes are not what the status line names");
        const names = await readArchiveNames(decompress(saved.stdout));
        assert.deepEqual(names.map((n) => n.replace(/\/$/, "")).sort(), [
          "work/deps",
          "work/deps/link",
          "work/deps/sub",
          "work/deps/sub/a.txt",
          "work/tool",
        ]);

        const other = createPod(flavour);
        const restored = await other.helper(["cache-restore", compression, "work/deps", "work/tool"], saved.stdout);
        assert.equal(restored.code, 0, restored.stderr);
        assert.equal(checkCacheRestoreReply(restored.stdout.toString()), undefined);
        assert.equal(readFileSync(join(other.work, "deps", "sub", "a.txt"), "utf8"), "alpha\n");
        assert.equal(readFileSync(join(other.work, "deps", "link"), "utf8"), "alpha\n");
        assert.equal(readFileSync(join(other.work, "tool"), "utf8"), "#!/bin/sh\n");
      });

      it("cache-save says none when no path exists, and writes no archive", async () => {
        const pod = createPod(flavour);
        const saved = await pod.helper(["cache-save", "work/nothing"]);
        assert.equal(saved.code, 0, saved.stderr);
        assert.deepEqual(parseCacheSaveStatus(saved.stderr), { missing: ["/work/nothing"], outcome: { kind: "none" } });
        assert.equal(saved.stdout.length, 0);
      });

      it("cache-restore of a cut archive fails, says so, and removes the paths that were absent before (a path that was there stays)", async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "deps"));
        writeFileSync(join(pod.work, "deps", "big"), Buffer.alloc(256 * 1024, 7));
        writeFileSync(join(pod.work, "kept"), "old\n");
        const saved = await pod.helper(["cache-save", "work/deps", "work/kept"]);
        const cut = saved.stdout.subarray(0, saved.stdout.length - 20);
        const other = createPod(flavour);
        writeFileSync(join(other.work, "kept"), "checkout's\n");
        const compression = compressorOf(flavour);
        const restored = await other.helper(["cache-restore", compression, "work/deps", "work/kept"], cut);
        assert.notEqual(restored.code, 0);
        assert.notEqual(restored.stdout.toString().trim(), CACHE_RESTORED_TAG);
        assert.match(
          checkCacheRestoreReply(restored.stdout.toString()) ?? "",
          new RegExp(`could not extract the archive \\(${compression === "zstd" ? "zstd" : "gunzip"}=[1-9]`),
        );
        assert.equal(existsSync(join(other.work, "deps")), false);
        assert.equal(existsSync(join(other.work, "kept")), true);
      });

      it("cache-restore none extracts a plain tar, as the host sends a zstd entry to a pod without zstd", async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "deps"));
        writeFileSync(join(pod.work, "deps", "a"), "plain\n");
        const saved = await pod.helper(["cache-save", "work/deps"]);
        const other = createPod(flavour);
        const restored = await other.helper(["cache-restore", "none", "work/deps"], decompress(saved.stdout));
        assert.equal(checkCacheRestoreReply(restored.stdout.toString()), undefined, restored.stderr);
        assert.equal(readFileSync(join(other.work, "deps", "a"), "utf8"), "plain\n");
      });

      it(`cache-restore zstd ${compressorOf(flavour) === "zstd" ? "checks the frame's content checksum" : "says at once that the image has no zstd, touches no path, and exits only once stdin ends"}`, async () => {
        const tar = spawnSync("tar", ["-cf", "-", "-C", "/etc", "hostname"]).stdout;
        const archive = spawnSync("zstd", ["-1", "-q", "-c", "--check"], { input: tar }).stdout;
        const pod = createPod(flavour);
        if (compressorOf(flavour) === "zstd") {
          // The last four bytes are the content checksum (xxh64): a wrong one fails zstd -d, not tar.
          const wrong = Buffer.from(archive);
          wrong[wrong.length - 1] = wrong[wrong.length - 1]! ^ 0xff;
          const restored = await pod.helper(["cache-restore", "zstd", "etc/hostname"], wrong);
          assert.match(checkCacheRestoreReply(restored.stdout.toString()) ?? "", /\(zstd=[1-9]/);
          return;
        }
        // A command that exits with stdin unread may lose its output (podman's exec did): it reads stdin to the end.
        const child = pod.startHelper(["cache-restore", "zstd", "work/deps"], { holdStdin: true });
        let said = "";
        child.stdout!.setEncoding("utf8").on("data", (text: string) => (said += text));
        const exited = once(child, "exit");
        child.stdin!.write(archive);
        while (!said.includes("\n") && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(findMissingDecoder(said), "zstd");
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(child.exitCode, null, "it exited with stdin still open");
        child.stdin!.end(archive);
        assert.deepEqual(await exited, [0, null]);
        assert.match(checkCacheRestoreReply(said) ?? "", /the pod has no zstd/);
        assert.equal(existsSync(join(pod.work, "deps")), false);
      });

      it("list-files prints every regular file under the directories that exist, NUL-terminated, names with newlines whole", async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "dist", "deep"), { recursive: true });
        writeFileSync(join(pod.work, "dist", "a.js"), "a");
        writeFileSync(join(pod.work, "dist", "deep", "line\nbreak"), "b");
        symlinkSync("a.js", join(pod.work, "dist", "alias"));
        const listed = await pod.helper(["list-files", "/work/dist", "/work/none"]);
        assert.equal(listed.code, 0, listed.stderr);
        const files = listed.stdout.toString().split("\0").filter(Boolean).sort();
        assert.deepEqual(files, ["/work/dist/a.js", "/work/dist/deep/line\nbreak"]);
        assert.match(listed.stderr, /knotless-files-listed/);
      });

      it("pack-files packs exactly the files named on stdin, not the rest of their directories", async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "dist", "deep"), { recursive: true });
        writeFileSync(join(pod.work, "dist", "a.js"), "a");
        writeFileSync(join(pod.work, "dist", "b.map"), "b");
        writeFileSync(join(pod.work, "dist", "deep", "c.js"), "c");
        writeFileSync(join(pod.work, "dist", "-dash.js"), "d");
        const packed = await pod.helper(["pack-files", "/work/dist"], "a.js\ndeep/c.js\n-dash.js\n");
        assert.equal(packed.code, 0, packed.stderr);
        assert.equal(parseFilesPacked(packed.stderr), "0");
        const names = await readArchiveNames(packed.stdout);
        assert.deepEqual(names.map((n) => n.replace(/^\.\//, "")).sort(), ["-dash.js", "a.js", "deep/c.js"]);
      });

      it("pack-files packs a list too long for one tar command line, every file once, and the host reads it as one stream", async () => {
        const pod = createPod(flavour);
        const dir = join(pod.work, "dist", "a-directory-whose-name-makes-every-path-long-enough");
        mkdirSync(dir, { recursive: true });
        const names = Array.from(
          { length: 3000 },
          (_, i) => `a-directory-whose-name-makes-every-path-long-enough/file number ${i}.js`,
        );
        for (const [i, name] of names.entries()) writeFileSync(join(pod.work, "dist", name), `content ${i}\n`);
        const packed = await pod.helper(["pack-files", "/work/dist"], `${names.join("\n")}\n`);
        assert.equal(packed.code, 0, packed.stderr);
        assert.equal(parseFilesPacked(packed.stderr), "0");
        const out = mkdtempSync(join(tmpdir(), "pack-files-out-"));
        try {
          const report = await extractOutputs(
            Readable.from([packed.stdout]),
            out,
            { maxBytes: 1 << 30, maxEntries: 100_000 },
            { concatenated: true },
          );
          assert.equal(report.entries, names.length);
          assert.equal(readFileSync(join(out, names[2999]!), "utf8"), "content 2999\n");
          // Without -T (busybox) xargs split the list: the stream is several archives, which a plain parser refuses.
          if (flavour === "busybox")
            await assert.rejects(
              extractOutputs(Readable.from([packed.stdout]), join(out, "plain"), {
                maxBytes: 1 << 30,
                maxEntries: 100_000,
              }),
              /after the end-of-archive block/,
            );
        } finally {
          rmSync(out, { recursive: true, force: true });
        }
      });

      it("pack-files fails with tar's code when a named file is gone", async () => {
        const pod = createPod(flavour);
        mkdirSync(join(pod.work, "dist"));
        writeFileSync(join(pod.work, "dist", "a.js"), "a");
        const packed = await pod.helper(["pack-files", "/work/dist"], "a.js\ngone.js\n");
        assert.notEqual(packed.code, 0);
        assert.notEqual(parseFilesPacked(packed.stderr), "0");
      });
    },
  );
}
