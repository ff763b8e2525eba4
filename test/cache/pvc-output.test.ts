// The host-side reading of the PVC cache commands' output, and the builders' refusals: no pod needed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hashCacheName } from "../../src/pod/pvc-layout.js";
import {
  parsePvcEvict,
  parsePvcList,
  parsePvcRestore,
  parsePvcSave,
  PvcOutputError,
} from "../../src/cache/pvc-output.js";
import { buildPvcEvictCommand, buildPvcRestoreCommand, buildPvcSaveCommand } from "../../src/cache/pvc-scripts.js";

const SHA = "a".repeat(64);

function meta(repo: string, key: string, extra: Record<string, string> = {}): string {
  const fields = { repo, bytes: "10", sha256: SHA, compression: "gzip", createdAt: "5000", ...extra };
  return ["knotless-cache-entry 1", ...Object.entries(fields).map(([k, v]) => `${k} ${v}`), `key ${key}`].join("\n");
}

function out(stdout: string, exitCode = 0, stderr = "") {
  return { exitCode, stdout, stderr };
}

describe("parsePvcList", () => {
  it("reads each entry's metadata, with its last use from the listed mtime", () => {
    const stdout = `entry ${hashCacheName("k1")} 7\n${meta("r", "k1")}\nentry ${hashCacheName("k 2")} 9\n${meta("r", "k 2", { createdAt: "1000" })}\nknotless-cache listed 2\n`;
    assert.deepEqual(parsePvcList(out(stdout), "r"), [
      { repo: "r", key: "k1", bytes: 10, sha256: SHA, compression: "gzip", createdAt: 5000, lastUsedAt: 7000 },
      { repo: "r", key: "k 2", bytes: 10, sha256: SHA, compression: "gzip", createdAt: 1000, lastUsedAt: 9000 },
    ]);
  });

  it("leaves out an entry of another repository, one whose key does not hash to its name, and incomplete ones", () => {
    const blocks = [
      `entry ${hashCacheName("k1")} 7\n${meta("other", "k1")}`,
      `entry ${hashCacheName("k1")} 7\n${meta("r", "k2")}`,
      `entry ${hashCacheName("k3")} 7\n${meta("r", "k3", { sha256: "zz" })}`,
      `entry ${hashCacheName("k4")} 7\nrepo r\nkey k4`,
      `entry ${hashCacheName("k5")} 7\n${meta("r", "k5")}`,
    ];
    const entries = parsePvcList(out(`${blocks.join("\n")}\nknotless-cache listed 5\n`), "r");
    assert.deepEqual(
      entries.map((e) => e.key),
      ["k5"],
    );
  });

  it("refuses output without the result line, with a count that disagrees, or from a command that failed", () => {
    assert.throws(() => parsePvcList(out(`entry ${hashCacheName("k")} 7\n${meta("r", "k")}\n`), "r"), PvcOutputError);
    assert.throws(
      () => parsePvcList(out(`entry ${hashCacheName("k")} 7\n${meta("r", "k")}\nknotless-cache listed 2\n`), "r"),
      /printed 1 entries but counted 2/,
    );
    assert.throws(() => parsePvcList(out("knotless-cache listed 0\n", 137, "Killed"), "r"), /exited 137: Killed/);
    assert.deepEqual(parsePvcList(out("knotless-cache listed 0\n"), "r"), []);
  });
});

describe("the other parsers", () => {
  it("read each outcome a command can end with", () => {
    assert.deepEqual(parsePvcRestore(out("knotless-cache restored 12\n")), { kind: "restored", bytes: 12 });
    assert.deepEqual(parsePvcRestore(out("knotless-cache corrupt the archive has 3 bytes\n")), {
      kind: "corrupt",
      reason: "the archive has 3 bytes",
    });
    assert.deepEqual(parsePvcSave(out(`knotless-cache saved 12 ${SHA}\n`)), { kind: "saved", bytes: 12, sha256: SHA });
    assert.deepEqual(parsePvcSave(out("knotless-cache too-large 12 10\n")), {
      kind: "too-large",
      bytes: 12,
      maxBytes: 10,
    });
    assert.deepEqual(parsePvcSave(out("tar noise\nknotless-cache exists\n")), { kind: "exists" });
    assert.deepEqual(parsePvcEvict(out("knotless-cache evicted 1 20 30\n")), {
      evicted: 1,
      freedBytes: 20,
      keptBytes: 30,
    });
  });

  it("refuse a result they do not know and a cut stream", () => {
    assert.throws(() => parsePvcRestore(out("knotless-cache restoring\n")), /no version of it says/);
    assert.throws(() => parsePvcSave(out("")), /without its result line/);
    assert.throws(() => parsePvcSave(out("knotless-cache saved 12\n")), PvcOutputError);
  });
});

describe("the command builders", () => {
  const save = { repo: "r", key: "k", paths: ["/work/deps"], maxBytes: 100, createdAt: 1, nonce: "n" };

  it("pass values as arguments after the script, never inside it", () => {
    const argv = buildPvcSaveCommand({ ...save, key: "it's $(rm -rf /)" });
    assert.deepEqual(argv.slice(0, 2), ["sh", "-c"]);
    assert.ok(!argv[2]!.includes("rm -rf"));
    assert.deepEqual(argv.slice(3), [
      "knotless-cache-save",
      hashCacheName("r"),
      hashCacheName("it's $(rm -rf /)"),
      "n",
      "100",
      "1",
      "r",
      "it's $(rm -rf /)",
      "/work/deps",
    ]);
  });

  it("refuse keys with line breaks, unsafe nonces, and paths that are relative, /, have .. or are in the claim", () => {
    assert.throws(() => buildPvcRestoreCommand("r", "a\nb", "n"), /line break/);
    assert.throws(() => buildPvcRestoreCommand("r", "k", "a/b"), /nonce/);
    for (const path of ["work/deps", "/", "//", "/work/../etc", "/knotless-cache", "/knotless-cache/x"]) {
      assert.throws(() => buildPvcSaveCommand({ ...save, paths: [path] }), RangeError, path);
    }
    assert.throws(() => buildPvcSaveCommand({ ...save, paths: [] }), /at least one path/);
    assert.throws(() => buildPvcEvictCommand(-1, "n"), /byte budget/);
  });
});
