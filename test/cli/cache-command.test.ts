// `cache list|prune` through the real CLI: its lines, its JSON, its exit codes, and bad input refused with exit 2.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createDirStore } from "../../src/cache/dir-store.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { runCliInProcess } from "../support/run-cli.js";

const HOUR = 3_600_000;

/** A store with entries saved (and last used) `hoursAgo` before now. */
async function makeStore(
  entries: ReadonlyArray<{ repo: string; key: string; bytes: number; hoursAgo: number }>,
): Promise<string> {
  const dir = join(makeTestTempDir("knotless-cache-cli-"), "cache");
  let time = Date.now();
  const store = createDirStore({ dir, maxBytes: Number.POSITIVE_INFINITY, now: () => time });
  for (const entry of entries) {
    time = Date.now() - entry.hoursAgo * HOUR;
    const writer = await store.beginSave(entry.repo, entry.key, "gzip");
    if (writer === "exists") throw new Error("exists");
    writer.stream.end(Buffer.alloc(entry.bytes, 1));
    assert.equal(await writer.commit(), "saved");
  }
  return dir;
}

const SAMPLE = [
  { repo: "acme/web", key: "deps-old", bytes: 3 * 1024 * 1024, hoursAgo: 50 },
  { repo: "acme/web", key: "deps-new", bytes: 2048, hoursAgo: 2 },
  { repo: "acme/api", key: "tools-1", bytes: 100, hoursAgo: 1 },
];

describe("the cache command", () => {
  it("lists one line per entry, least recently used first, then a total", async () => {
    const dir = await makeStore(SAMPLE);
    const run = await runCliInProcess(["cache", "list", "--cache-dir", dir]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, /^REPO +KEY +SIZE +AGE +LAST USED$/);
    assert.match(lines[1]!, /^acme\/web +deps-old +3\.0 MiB +50h00m +50h00m ago$/);
    assert.match(lines[2]!, /^acme\/web +deps-new +2\.0 KiB +2h00m +2h00m ago$/);
    assert.match(lines[3]!, /^acme\/api +tools-1 +100 B +1h00m +1h00m ago$/);
    assert.equal(lines[4], `3 entries, 3.0 MiB in ${dir}`);
    assert.equal(lines.length, 5);
  });

  it("lists one repository's entries with --repo, and JSON with --json", async () => {
    const dir = await makeStore(SAMPLE);
    const run = await runCliInProcess(["cache", "list", "--cache-dir", dir, "--repo", "acme/api", "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const listed = JSON.parse(run.stdout) as {
      dir: string;
      totalBytes: number;
      entries: Array<Record<string, unknown>>;
      damaged: unknown[];
    };
    assert.equal(listed.dir, dir);
    assert.equal(listed.totalBytes, 100);
    assert.deepEqual(
      listed.entries.map((entry) => [entry.repo, entry.key, entry.bytes, entry.compression]),
      [["acme/api", "tools-1", 100, "gzip"]],
    );
    assert.match(String(listed.entries[0]!.sha256), /^[0-9a-f]{64}$/);
    assert.match(String(listed.entries[0]!.lastUsedAt), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(listed.damaged, []);
  });

  it("lists an empty store under $XDG_CACHE_HOME when no --cache-dir is given", async () => {
    const home = makeTestTempDir("knotless-xdg-");
    const run = await runCliInProcess(["cache", "list"], { env: { XDG_CACHE_HOME: home } });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `0 entries, 0 B in ${home}/knotless-runner-k8s\n`);
  });

  it("prunes entries unused for longer than --older-than and says which and why", async () => {
    const dir = await makeStore(SAMPLE);
    const run = await runCliInProcess(["cache", "prune", "--cache-dir", dir, "--older-than", "24h"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^removed acme\/web deps-old \(3\.0 MiB\): not used for 50h00m, longer than --older-than 24h00m\n/,
    );
    assert.match(
      run.stdout,
      new RegExp(`\\nprune: removed 1 entry \\(3\\.0 MiB\\); kept 2 entries \\(2\\.1 KiB\\) in ${dir}\\n$`),
    );
    const after = await runCliInProcess(["cache", "list", "--cache-dir", dir, "--json"]);
    assert.deepEqual(
      (JSON.parse(after.stdout) as { entries: Array<{ key: string }> }).entries.map((entry) => entry.key),
      ["deps-new", "tools-1"],
    );
  });

  it("prunes the least recently used down to --max-bytes, and prints JSON with --json", async () => {
    const dir = await makeStore(SAMPLE);
    const run = await runCliInProcess(["cache", "prune", "--cache-dir", dir, "--max-bytes", "2Ki", "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      removed: Array<{ kind: string; key: string }>;
      kept: { entries: number; bytes: number };
    };
    assert.deepEqual(
      report.removed.map((removal) => `${removal.kind} ${removal.key}`),
      ["over-size deps-old", "over-size deps-new"],
    );
    assert.deepEqual(report.kept, { entries: 1, bytes: 100 });
  });

  it("refuses a missing or unknown action, prune's options on list, bad durations, sizes and flags with exit 2", async () => {
    const dir = await makeStore([]);
    const cases: Array<[string[], RegExp]> = [
      [["cache"], /missing required argument/],
      [["cache", "purge", "--cache-dir", dir], /cache expects list or prune, got "purge"/],
      [
        ["cache", "list", "--cache-dir", dir, "--older-than", "1h"],
        /--older-than is an option of cache prune, not of cache list/,
      ],
      [["cache", "list", "--cache-dir", dir, "--max-bytes", "1G"], /--max-bytes is an option of cache prune/],
      [
        ["cache", "prune", "--cache-dir", dir, "--older-than", "soon"],
        /--older-than expects a duration such as 90s, 10m or 1h, got "soon"/,
      ],
      [["cache", "prune", "--cache-dir", dir, "--older-than", "200h"], /--older-than expects at most 168h/],
      [["cache", "prune", "--cache-dir", dir, "--max-bytes", "lots"], /--max-bytes expects a byte count/],
      [
        ["cache", "list", "--cache-dir", dir, "--repo", "x".repeat(513)],
        /--repo: a cache repository must be at most 512 characters/,
      ],
      [["cache", "list", "--nope"], /unknown option '--nope'/],
    ];
    for (const [args, pattern] of cases) {
      const run = await runCliInProcess(args);
      assert.equal(run.code, 2, `${args.join(" ")}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, pattern, args.join(" "));
    }
  });

  it("exits 3 when the store cannot be read", async () => {
    const file = join(makeTestTempDir("knotless-cache-cli-"), "not-a-dir");
    writeFileSync(file, "x");
    const run = await runCliInProcess(["cache", "list", "--cache-dir", file]);
    assert.equal(run.code, 3, run.stdout);
    assert.match(run.stderr, /knotless-runner-k8s: cache: ENOTDIR/);
  });
});
