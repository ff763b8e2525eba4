// The host directory cache store: atomic saves, one winner per key across processes, damaged and refused entries, LRU, isolation.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { CacheCorruptError } from "../../src/workflow/cache-types.js";
import { ENTRY_WRITE_BATCH_BYTES } from "../../src/cache/entry-writer.js";
import { InputError } from "../../src/core/errors.js";
import { contentOf, exactEntry, makeTestStore, readAll, saveEntry, sha256 } from "./store-helpers.js";

const SAVE_CHILD = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "save-child.js");

/** Every file under `dir`, relative, sorted. */
function walk(dir: string): string[] {
  const out: string[] = [];
  const visit = (at: string): void => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) visit(path);
      else out.push(relative(dir, path));
    }
  };
  visit(dir);
  return out.sort();
}

function entryFiles(dir: string): string[] {
  return walk(dir).filter((path) => path.startsWith("v1/repos/"));
}

function tempFiles(dir: string): string[] {
  return walk(dir).filter((path) => path.startsWith("v1/tmp/"));
}

describe("saving into the directory store", () => {
  it("keeps a save invisible until its commit, then gives back exactly its bytes with their sha256", async () => {
    const { store, dir } = makeTestStore();
    const content = contentOf("atomic", 3 * 1024 * 1024 + 17);
    const writer = await store.beginSave("acme/web", "deps-1", "gzip");
    assert.notEqual(writer, "exists");
    if (writer === "exists") return;
    writer.stream.write(content.subarray(0, 1024 * 1024));
    assert.deepEqual(await store.lookup("acme/web", { key: "deps-1", restoreKeys: ["deps-"] }), { kind: "miss" });
    assert.deepEqual(entryFiles(dir), [], "an entry file exists before the commit");
    assert.equal(tempFiles(dir).length, 1);
    writer.stream.end(content.subarray(1024 * 1024));
    assert.equal(await writer.commit(), "saved");
    const entry = await exactEntry(store, "acme/web", "deps-1");
    assert.deepEqual(
      { ...entry },
      {
        repo: "acme/web",
        key: "deps-1",
        bytes: content.length,
        sha256: sha256(content),
        compression: "gzip",
        createdAt: 1_800_000_000_000,
        lastUsedAt: 1_800_000_000_000,
      },
    );
    assert.ok((await readAll(store.openRead(entry))).equals(content));
    assert.deepEqual(tempFiles(dir), [], "the temp file is left behind");
    assert.equal(entryFiles(dir).length, 1);
  });

  it("leaves nothing behind when a save is aborted, and aborting twice is fine", async () => {
    const { store, dir } = makeTestStore();
    const writer = await store.beginSave("acme/web", "deps-1", "none");
    if (writer === "exists") return assert.fail("exists");
    writer.stream.write(contentOf("aborted", 100_000));
    await writer.abort();
    await writer.abort();
    assert.deepEqual(
      walk(dir).filter((path) => !path.endsWith("/")),
      [],
    );
    assert.deepEqual(await store.lookup("acme/web", { key: "deps-1", restoreKeys: [] }), { kind: "miss" });
  });

  it("never rewrites a saved key: a later save says exists at once and the entry keeps its bytes", async () => {
    const { store } = makeTestStore();
    const first = contentOf("first", 5000);
    assert.equal(await saveEntry(store, "r", "k", first), "saved");
    assert.equal(await saveEntry(store, "r", "k", contentOf("second", 5000)), "exists");
    assert.ok((await readAll(store.openRead(await exactEntry(store, "r", "k")))).equals(first));
  });

  it("lets exactly one of two saves of one key in one process win; the other says exists and the entry is the winner's", async () => {
    const { store, dir } = makeTestStore();
    const contents = [contentOf("one", 2 * 1024 * 1024), contentOf("two", 2 * 1024 * 1024 + 1)];
    const writers = await Promise.all(contents.map(() => store.beginSave("r", "same", "gzip")));
    const commits = writers.map((writer, index) => {
      if (writer === "exists") throw new Error("beginSave said exists before any commit");
      writer.stream.end(contents[index]!);
      return writer.commit();
    });
    const outcomes = await Promise.all(commits);
    assert.deepEqual([...outcomes].sort(), ["exists", "saved"]);
    const winner = contents[outcomes.indexOf("saved")]!;
    const entry = await exactEntry(store, "r", "same");
    assert.equal(entry.sha256, sha256(winner));
    assert.ok((await readAll(store.openRead(entry))).equals(winner));
    assert.deepEqual(tempFiles(dir), []);
  });

  it("lets exactly one of four runner processes saving one key win; the others say exists and the store stays sound", async () => {
    const { store, dir } = makeTestStore();
    const labels = ["a", "b", "c", "d"];
    const children = labels.map((label) => {
      const child = spawn(process.execPath, [SAVE_CHILD, dir, "acme/web", "deps-shared", label], {
        stdio: ["pipe", "pipe", "inherit"],
      });
      let output = "";
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding("utf8").on("data", (text: string) => {
          output += text;
          if (output.includes("ready\n")) resolve();
        });
        child.on("close", () => reject(new Error(`child ${label} ended before it was ready: ${output}`)));
      });
      const closed = new Promise<string>((resolve) => child.on("close", () => resolve(output)));
      return { child, ready, closed };
    });
    await Promise.all(children.map(({ ready }) => ready));
    // Every child holds a complete temp file now; all commit at once.
    for (const { child } of children) child.stdin.write("go\n");
    const outputs = await Promise.all(children.map(({ closed }) => closed));
    const results = outputs.map((output) => output.split("\n").find((line) => /^(saved|exists) /.test(line)) ?? output);
    const saved = results.filter((line) => line.startsWith("saved "));
    assert.equal(saved.length, 1, results.join("; "));
    assert.equal(results.filter((line) => line.startsWith("exists ")).length, 3, results.join("; "));
    const label = saved[0]!.slice("saved ".length);
    const expected = Buffer.alloc(64 * 1024 * 64, label);
    const entry = await exactEntry(store, "acme/web", "deps-shared");
    assert.equal(entry.sha256, sha256(expected));
    assert.ok((await readAll(store.openRead(entry))).equals(expected));
    assert.deepEqual(tempFiles(dir), []);
    assert.equal(entryFiles(dir).length, 1);
  });
});

describe("damaged entries in the directory store", () => {
  it("finds a truncated entry at lookup, reports it, removes it and calls it a miss", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "deps-1", contentOf("t", 10_000));
    const [file] = entryFiles(test.dir);
    truncateSync(join(test.dir, file!), 6000);
    assert.deepEqual(await test.store.lookup("r", { key: "deps-1", restoreKeys: ["deps-"] }), { kind: "miss" });
    assert.equal(test.events.length, 1);
    assert.equal(test.events[0]!.kind, "damaged");
    assert.match((test.events[0] as { reason: string }).reason, /trailer is missing|truncated/);
    assert.deepEqual(entryFiles(test.dir), []);
  });

  it("fails the read of an entry truncated after its lookup with CacheCorruptError, and removes it", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "deps-1", contentOf("t", 10_000));
    const entry = await exactEntry(test.store, "r", "deps-1");
    truncateSync(join(test.dir, entryFiles(test.dir)[0]!), 4000);
    await assert.rejects(
      readAll(test.store.openRead(entry)),
      (error: unknown) => error instanceof CacheCorruptError && /corrupt: .*; it was removed/.test(error.message),
    );
    assert.deepEqual(entryFiles(test.dir), []);
    assert.deepEqual(
      test.events.map((event) => event.kind),
      ["damaged"],
    );
  });

  it("fails the read of an entry with one changed byte with CacheCorruptError before its last piece, and removes it", async () => {
    const test = makeTestStore();
    const content = contentOf("flip", 3 * 1024 * 1024);
    await saveEntry(test.store, "r", "deps-1", content);
    const path = join(test.dir, entryFiles(test.dir)[0]!);
    const bytes = readFileSync(path);
    bytes[1_500_000] = bytes[1_500_000]! ^ 0x01;
    writeFileSync(path, bytes);
    const entry = await exactEntry(test.store, "r", "deps-1");
    let received = 0;
    const stream = test.store.openRead(entry);
    stream.on("data", (chunk: Buffer) => (received += chunk.length));
    await assert.rejects(
      new Promise((resolve, reject) => stream.on("end", resolve).on("error", reject)),
      (error: unknown) =>
        error instanceof CacheCorruptError && /bytes hash to sha256 [0-9a-f]{64}, not the/.test(error.message),
    );
    assert.ok(received < content.length, `all ${received} bytes were delivered before the checksum failed`);
    assert.deepEqual(entryFiles(test.dir), []);
    assert.deepEqual(await test.store.lookup("r", { key: "deps-1", restoreKeys: [] }), { kind: "miss" });
    assert.equal(test.events.filter((event) => event.kind === "damaged").length, 1);
  });

  it("treats a file whose trailer names another key as damaged", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "a", contentOf("a", 100));
    await saveEntry(test.store, "r", "b", contentOf("b", 100));
    const files = entryFiles(test.dir).map((file) => join(test.dir, file));
    writeFileSync(files[1]!, readFileSync(files[0]!));
    const listing = await test.store.list();
    assert.equal(listing.entries.length, 1);
    assert.match(listing.damaged[0]!.reason, /names another repository or key/);
  });
});

describe("removing an entry a restore refused from the directory store", () => {
  it("removes the entry as it was looked up, and another repository's entry of the same key stays", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "deps-1", contentOf("refused", 1000));
    await saveEntry(test.store, "other", "deps-1", contentOf("other", 1000));
    const entry = await exactEntry(test.store, "r", "deps-1");
    assert.equal(await test.store.remove(entry), true);
    assert.deepEqual(await test.store.lookup("r", { key: "deps-1", restoreKeys: [] }), { kind: "miss" });
    assert.equal((await exactEntry(test.store, "other", "deps-1")).bytes, 1000);
    assert.equal(entryFiles(test.dir).length, 1);
    assert.equal(await test.store.remove(entry), false, "removing it twice");
  });

  it("never removes a different entry saved under the key since the lookup", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "deps-1", contentOf("first", 1000));
    const refused = await exactEntry(test.store, "r", "deps-1");
    assert.equal(await test.store.remove(refused), true);
    test.time += 1000;
    assert.equal(await saveEntry(test.store, "r", "deps-1", contentOf("second", 1000)), "saved");
    assert.equal(await test.store.remove(refused), false);
    assert.ok(
      (await readAll(test.store.openRead(await exactEntry(test.store, "r", "deps-1")))).equals(
        contentOf("second", 1000),
      ),
    );
  });
});

describe("eviction in the directory store", () => {
  it("evicts the least recently used entry after a save goes over maxBytes, counting a read as a use", async () => {
    const test = makeTestStore(3000);
    for (const [key, time] of [
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ] as const) {
      test.time = 1_800_000_000_000 + time * 1000;
      assert.equal(await saveEntry(test.store, "r", key, contentOf(key, 1000)), "saved");
    }
    test.time += 1000;
    await readAll(test.store.openRead(await exactEntry(test.store, "r", "a")));
    test.time += 1000;
    assert.equal(await saveEntry(test.store, "r", "d", contentOf("d", 1000)), "saved");
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => entry.key),
      ["c", "a", "d"],
    );
    assert.deepEqual(
      test.events.map((event) => (event.kind === "evicted" ? `evicted ${event.entry.key}` : event.kind)),
      ["evicted b"],
    );
  });

  it("keeps the entry just saved over older ones, and does not keep an archive larger than maxBytes", async () => {
    const test = makeTestStore(1000);
    await saveEntry(test.store, "r", "x", contentOf("x", 600));
    test.time += 1000;
    assert.equal(await saveEntry(test.store, "r", "y", contentOf("y", 600)), "saved");
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => entry.key),
      ["y"],
    );
    await assert.rejects(
      saveEntry(test.store, "r", "z", contentOf("z", 1500), 100),
      /is 1500 bytes, more than the store's limit of 1000 bytes: not kept/,
    );
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => entry.key),
      ["y"],
    );
    assert.deepEqual(tempFiles(test.dir), []);
  });

  it("evicts across repositories: the limit is the whole store's", async () => {
    const test = makeTestStore(1500);
    await saveEntry(test.store, "one", "k", contentOf("1", 1000));
    test.time += 1000;
    await saveEntry(test.store, "two", "k", contentOf("2", 1000));
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => `${entry.repo}:${entry.key}`),
      ["two:k"],
    );
  });
});

describe("keys and repositories in the directory store", () => {
  it("never shows one repository's entries to another, by key or by prefix", async () => {
    const { store } = makeTestStore();
    await saveEntry(store, "acme/web", "deps-1", contentOf("web", 100));
    assert.deepEqual(await store.lookup("acme/api", { key: "deps-1", restoreKeys: ["deps-", ""] }), { kind: "miss" });
    assert.equal(await saveEntry(store, "acme/api", "deps-1", contentOf("api", 100)), "saved");
    assert.equal((await exactEntry(store, "acme/api", "deps-1")).sha256, sha256(contentOf("api", 100)));
  });

  it("restores the newest entry of the first matching prefix when the exact key is missing", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "deps-old", contentOf("o", 10));
    test.time += 1000;
    await saveEntry(test.store, "r", "deps-new", contentOf("n", 10));
    const found = await test.store.lookup("r", { key: "deps-zzz", restoreKeys: ["nothing-", "deps-"] });
    assert.equal(found.kind, "fallback");
    assert.equal(found.kind === "fallback" && `${found.prefix} ${found.entry.key}`, "deps- deps-new");
  });

  it("keeps hostile keys and repository names inside its directory, named by their hashes, and lists them as given", async () => {
    const parent = makeTestStore().dir;
    const test = makeTestStore(Number.POSITIVE_INFINITY, join(parent, "..", "inner", "store"));
    const root = join(test.dir, "..");
    const keys = ["../../../escape", "/etc/passwd", "a/b/../../c", "x".repeat(512), "ünï\u{1F600}\n\t", ".", ".."];
    const repos = ["..", "../../..", "/abs", "acme/web"];
    for (const repo of repos)
      for (const key of keys) assert.equal(await saveEntry(test.store, repo, key, contentOf(repo + key, 50)), "saved");
    const files = walk(root);
    assert.equal(files.length, keys.length * repos.length);
    for (const file of files) assert.match(file, /^store\/v1\/repos\/[0-9a-f]{64}\/[0-9a-f]{64}\.entry$/);
    const listed = (await test.store.list()).entries.map((entry) => `${entry.repo} ${entry.key}`).sort();
    assert.deepEqual(listed, repos.flatMap((repo) => keys.map((key) => `${repo} ${key}`)).sort());
  });

  it("refuses a key or repository with NUL, longer than 512 characters, or empty, as bad input", async () => {
    const { store } = makeTestStore();
    await assert.rejects(
      store.beginSave("r", "a\0b", "gzip"),
      (error: unknown) => error instanceof InputError && /must not contain a NUL/.test(error.message),
    );
    await assert.rejects(store.beginSave("r\0", "a", "gzip"), InputError);
    await assert.rejects(store.beginSave("r", "x".repeat(513), "gzip"), /at most 512 characters, got 513/);
    await assert.rejects(store.lookup("", { key: "a", restoreKeys: [] }), /must not be empty/);
    await assert.rejects(store.lookup("r", { key: "a", restoreKeys: ["p\0"] }), /restore key must not contain a NUL/);
  });
});

describe("pruning the directory store", () => {
  it("removes temp files left for more than an hour, and keeps younger ones (a live save's)", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "r", "k", contentOf("k", 10));
    const stale = join(test.dir, "v1", "tmp", "0".repeat(32) + ".part");
    const young = join(test.dir, "v1", "tmp", "1".repeat(32) + ".part");
    writeFileSync(stale, "left by a killed runner");
    writeFileSync(young, "being written");
    // Temp files' ages are the real clock's (the kernel stamps their writes), whatever the store's clock says.
    utimesSync(stale, new Date(Date.now() - 3_600_500), new Date(Date.now() - 3_600_500));
    utimesSync(young, new Date(Date.now() - 3_500_000), new Date(Date.now() - 3_500_000));
    const report = await test.store.prune({});
    assert.deepEqual(
      report.removed.map((removal) => removal.kind === "temp" && relative(test.dir, removal.path)),
      [`v1/tmp/${"0".repeat(32)}.part`],
    );
    assert.deepEqual(tempFiles(test.dir), [`v1/tmp/${"1".repeat(32)}.part`]);
    assert.equal(report.kept.length, 1);
  });

  it("removes entries unused for longer than --older-than, then the least recently used down to --max-bytes", async () => {
    const test = makeTestStore();
    const start = test.time;
    for (const [key, hoursAgo] of [
      ["old", 50],
      ["mid", 30],
      ["new", 2],
      ["newest", 1],
    ] as const) {
      test.time = start - hoursAgo * 3_600_000;
      await saveEntry(test.store, "r", key, contentOf(key, 1000));
    }
    test.time = start;
    const report = await test.store.prune({ olderThanMs: 24 * 3_600_000, maxBytes: 1500 });
    assert.deepEqual(
      report.removed.map((removal) => ("entry" in removal ? `${removal.kind} ${removal.entry.key}` : removal.kind)),
      ["unused old", "unused mid", "over-size new"],
    );
    assert.deepEqual(
      report.kept.map((entry) => entry.key),
      ["newest"],
    );
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => entry.key),
      ["newest"],
    );
  });

  it("prunes only the repository it is given", async () => {
    const test = makeTestStore();
    await saveEntry(test.store, "a", "k", contentOf("a", 100));
    await saveEntry(test.store, "b", "k", contentOf("b", 100));
    const report = await test.store.prune({ repo: "a", maxBytes: 0 });
    assert.deepEqual(
      report.removed.map((removal) => "entry" in removal && removal.entry.repo),
      ["a"],
    );
    assert.deepEqual(
      (await test.store.list()).entries.map((entry) => entry.repo),
      ["b"],
    );
  });

  it("lists an empty store when its directory does not exist yet", async () => {
    const test = makeTestStore();
    assert.deepEqual(await test.store.list(), { entries: [], damaged: [] });
    assert.deepEqual(await test.store.prune({ olderThanMs: 1000 }), { removed: [], kept: [] });
  });
});

describe("the directory store's writer", () => {
  it("ends the stream itself when commit is called before the end, and keeps every byte written", async () => {
    const { store } = makeTestStore();
    const writer = await store.beginSave("r", "k", "none");
    if (writer === "exists") return assert.fail("exists");
    const content = contentOf("early", 200_000);
    writer.stream.write(content);
    assert.equal(await writer.commit(), "saved");
    assert.ok((await readAll(store.openRead(await exactEntry(store, "r", "k")))).equals(content));
  });

  it("keeps every byte in order when the archive comes in thousands of small pieces, as kubectl's stdout gives it", async () => {
    const { store } = makeTestStore();
    const writer = await store.beginSave("r", "pieces", "zstd");
    if (writer === "exists") return assert.fail("exists");
    const content = contentOf("pieces", 3 * 1024 * 1024 + 5);
    for (let at = 0, size = 1; at < content.length; at += size, size = ((size * 7 + 13) % 30_000) + 1)
      writer.stream.write(content.subarray(at, at + size));
    assert.equal(await writer.commit(), "saved");
    const entry = await exactEntry(store, "r", "pieces");
    assert.equal(entry.sha256, sha256(content));
    assert.ok((await readAll(store.openRead(entry))).equals(content));
  });

  it("writes small pieces to its file a megabyte at a time: not one write per piece, and not all at the end", async () => {
    const { store, dir } = makeTestStore();
    const writer = await store.beginSave("r", "batched", "zstd");
    if (writer === "exists") return assert.fail("exists");
    const content = contentOf("batched", 2 * ENTRY_WRITE_BATCH_BYTES + 100);
    const written: Promise<void>[] = [];
    for (let at = 0; at < content.length; at += 26_000)
      written.push(new Promise((resolve) => writer.stream.write(content.subarray(at, at + 26_000), () => resolve())));
    await Promise.all(written);
    const [temp] = tempFiles(dir);
    assert.ok(temp !== undefined);
    const onDisk = statSync(join(dir, temp)).size;
    assert.ok(
      onDisk >= ENTRY_WRITE_BATCH_BYTES && onDisk < content.length,
      `${onDisk} bytes on disk of ${content.length} taken`,
    );
    assert.equal(await writer.commit(), "saved");
    assert.ok((await readAll(store.openRead(await exactEntry(store, "r", "batched")))).equals(content));
  });

  it("says exists to a save begun after the key was saved, without making a temp file", async () => {
    const { store, dir } = makeTestStore();
    await saveEntry(store, "r", "k", contentOf("k", 10));
    assert.equal(await store.beginSave("r", "k", "gzip"), "exists");
    assert.deepEqual(tempFiles(dir), []);
  });
});

describe("saves in progress in the directory store", () => {
  it("are never swept as stale by another save's commit, whatever the store's clock says", async () => {
    const test = makeTestStore();
    test.time = Date.now() + 30 * 24 * 3_600_000;
    const slow = await test.store.beginSave("r", "slow", "gzip");
    if (slow === "exists") return assert.fail("exists");
    slow.stream.write(contentOf("slow", 1000));
    assert.equal(await saveEntry(test.store, "r", "quick", contentOf("quick", 1000)), "saved");
    slow.stream.end();
    assert.equal(await slow.commit(), "saved");
  });
});
