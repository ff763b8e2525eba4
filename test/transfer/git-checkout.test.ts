// The host clone: its failure message, with a fake git that fails the way a real one does (hints and the reason over several lines); tags with a real git.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cloneAtSha, GitCheckoutError } from "../../src/transfer/git-checkout.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("the host clone", () => {
  const dir = makeTestTempDir("git-checkout-");
  const fakeGit = (name: string, stderr: string): string => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\ncase "$1" in init) exit 0;; esac\nprintf '%s' '${stderr}' >&2\nexit 128\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const spec = { url: "https://git.example/repo.git", sha: "a".repeat(40), depth: 1, submodules: false };

  it("quotes git's whole message when a clone fails, not only its last line", async () => {
    const git = fakeGit(
      "git-two-lines",
      "fatal: could not read Username for https://git.example: terminal prompts disabled\nerror: see the log above\n",
    );
    await assert.rejects(
      cloneAtSha(spec, join(dir, "work1"), { binary: git, env: {} }, new AbortController().signal),
      (error: Error) => {
        assert.ok(error instanceof GitCheckoutError);
        assert.match(
          error.message,
          /^git fetch failed \(exit 128\): fatal: could not read Username .*\nerror: see the log above$/,
        );
        return true;
      },
    );
  });

  it("bounds a long git message to its last 40 lines, marking the cut", async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `remote: line ${i}`).join("\n");
    const git = fakeGit("git-long", `${lines}\n`);
    await assert.rejects(
      cloneAtSha(spec, join(dir, "work2"), { binary: git, env: {} }, new AbortController().signal),
      (error: Error) => {
        assert.match(error.message, /: \[\.\.\.\]\nremote: line 60\n/);
        assert.equal(error.message.split("\n").length, 41);
        return true;
      },
    );
  });

  it("fetches every tag with the commit when the spec asks for tags, and none when it does not", async () => {
    const git = (cwd: string, ...args: string[]): string =>
      execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" }).trim();
    const repo = join(dir, "tagged-repo");
    mkdirSync(repo);
    git(repo, "init", "-q");
    writeFileSync(join(repo, "a.txt"), "a\n");
    git(repo, "add", "a.txt");
    git(repo, "commit", "-q", "-m", "a");
    git(repo, "tag", "-a", "-m", "release", "v1");
    const sha = git(repo, "rev-parse", "HEAD");
    const host = { binary: "git", env: process.env };
    const base = { url: `file://${repo}`, sha, depth: 1, submodules: false };
    await cloneAtSha({ ...base, tags: true }, join(dir, "with-tags"), host, new AbortController().signal);
    assert.equal(git(join(dir, "with-tags"), "tag", "--list"), "v1");
    assert.equal(git(join(dir, "with-tags"), "rev-parse", "HEAD"), sha);
    await cloneAtSha(base, join(dir, "without-tags"), host, new AbortController().signal);
    assert.equal(git(join(dir, "without-tags"), "tag", "--list"), "");
  });
});
