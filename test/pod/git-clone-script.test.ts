// The in-pod clone script, run by a real sh (dash, busybox sh, bash) and git against a local repository: the commit at its depth, submodules, tags, and each failure tagged.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  buildGitCloneCommand,
  buildGitProbeCommand,
  GIT_FOUND_TAG,
  readCloneReply,
} from "../../src/pod/git-clone-script.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const git = (cwd: string, ...args: string[]): string =>
  execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", "-c", "protocol.file.allow=always", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();

/** The shells an image may have as `sh`: the host's (dash on Debian), busybox's, bash in POSIX mode; a test of one this machine lacks is skipped. */
const SHELLS = (
  [
    ["sh", ["sh"]],
    ["busybox sh", ["busybox", "sh"]],
    ["bash", ["bash", "--posix"]],
  ] as const
).map(([name, argv]) => ({
  name,
  argv,
  skip: spawnSync(argv[0], [...argv.slice(1), "-c", "true"]).status === 0 ? false : `${argv[0]} is not on this machine`,
}));

/** Runs the command as the pod would (argv, no shell of ours), in a fresh empty directory; `shell` stands in for its `sh`. */
function runClone(
  command: readonly string[],
  shell: readonly string[] = ["sh"],
): { code: number | null; stdout: string; stderr: string } {
  assert.equal(command[0], "sh");
  const argv = [...shell, ...command.slice(1)];
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "protocol.file.allow",
      GIT_CONFIG_VALUE_0: "always",
    },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the in-pod git clone script", () => {
  const root = makeTestTempDir("git-clone-script-");
  const sub = join(root, "sub");
  mkdirSync(sub);
  git(sub, "init", "-q");
  writeFileSync(join(sub, "lib.txt"), "from the submodule\n");
  git(sub, "add", "lib.txt");
  git(sub, "commit", "-q", "-m", "lib");
  const repo = join(root, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q");
  writeFileSync(join(repo, "file.txt"), "first\n");
  git(repo, "add", "file.txt");
  git(repo, "commit", "-q", "-m", "first");
  const first = git(repo, "rev-parse", "HEAD");
  git(repo, "tag", "-a", "-m", "the first release", "v1.0.0");
  git(repo, "submodule", "add", "-q", `file://${sub}`, "lib");
  writeFileSync(join(repo, "file.txt"), "second\n");
  git(repo, "commit", "-q", "-am", "second");
  const second = git(repo, "rev-parse", "HEAD");
  git(repo, "tag", "v2-light");
  let n = 0;
  const fresh = (): string => {
    const dir = join(root, `work-${n++}`);
    mkdirSync(dir);
    return dir;
  };

  it("checks out exactly the asked commit at depth 1 by default, detached, and reports its HEAD", () => {
    const dir = fresh();
    const r = runClone(buildGitCloneCommand({ url: `file://${repo}`, sha: first, depth: 1, submodules: false }, dir));
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readCloneReply(r.stdout), { ok: true, head: first });
    assert.equal(readFileSync(join(dir, "file.txt"), "utf8"), "first\n");
    assert.equal(git(dir, "rev-list", "--count", "HEAD"), "1");
  });

  it("fetches the asked depth and the submodules when asked", () => {
    const dir = fresh();
    const r = runClone(buildGitCloneCommand({ url: `file://${repo}`, sha: second, depth: 2, submodules: true }, dir));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git(dir, "rev-list", "--count", "HEAD"), "2");
    assert.equal(readFileSync(join(dir, "lib", "lib.txt"), "utf8"), "from the submodule\n");
  });

  it("leaves the submodules out unless asked", () => {
    const dir = fresh();
    assert.equal(
      runClone(buildGitCloneCommand({ url: `file://${repo}`, sha: second, depth: 1, submodules: false }, dir)).code,
      0,
    );
    assert.throws(() => readFileSync(join(dir, "lib", "lib.txt")));
  });

  it("exits 1 naming the git step that failed and its exit code: a commit the server does not have, a URL nothing answers", () => {
    const missing = runClone(
      buildGitCloneCommand({ url: `file://${repo}`, sha: "0".repeat(40), depth: 1, submodules: false }, fresh()),
    );
    assert.equal(missing.code, 1);
    assert.deepEqual(readCloneReply(missing.stdout), { ok: false, step: "fetch", code: 128 });
    assert.match(missing.stderr, /not our ref|couldn't find remote ref|unadvertised/);
    const nowhere = runClone(
      buildGitCloneCommand({ url: `file://${root}/nothing-here`, sha: first, depth: 1, submodules: false }, fresh()),
    );
    assert.deepEqual(readCloneReply(nowhere.stdout), { ok: false, step: "fetch", code: 128 });
  });

  it("takes a URL with shell metacharacters as one argument, never as shell", () => {
    const marker = join(root, "pwned");
    const r = runClone(
      buildGitCloneCommand(
        { url: `file://${repo}$(touch ${marker})`, sha: first, depth: 1, submodules: false },
        fresh(),
      ),
    );
    assert.equal(r.code, 1);
    assert.throws(() => readFileSync(marker));
  });

  it("passes tags as its sixth argument, 1 only when the spec asks for them, after the directory", () => {
    const base = { url: "https://git.example/r.git", sha: first, depth: 3, submodules: true };
    assert.deepEqual(buildGitCloneCommand(base, "/work").slice(3), [
      "knotless-clone",
      "https://git.example/r.git",
      first,
      "3",
      "1",
      "/work",
      "0",
    ]);
    assert.equal(buildGitCloneCommand({ ...base, tags: true }, "/work").at(-1), "1");
    assert.equal(buildGitCloneCommand({ ...base, tags: false }, "/work").at(-1), "0");
  });

  for (const { name, argv: shell, skip } of SHELLS) {
    it(
      `under ${name}: the commit at its depth, with every tag when asked (as spindle's fetch --tags) and none otherwise`,
      { skip },
      () => {
        const tagged = fresh();
        const r = runClone(
          buildGitCloneCommand({ url: `file://${repo}`, sha: second, depth: 1, submodules: false, tags: true }, tagged),
          shell,
        );
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(readCloneReply(r.stdout), { ok: true, head: second });
        assert.equal(git(tagged, "rev-parse", "HEAD"), second);
        assert.equal(git(tagged, "tag", "--list").split("\n").sort().join(" "), "v1.0.0 v2-light");
        assert.equal(git(tagged, "rev-parse", "v1.0.0^{commit}"), first);
        assert.equal(git(tagged, "describe", "--tags"), "v2-light");
        const plain = fresh();
        const p = runClone(
          buildGitCloneCommand({ url: `file://${repo}`, sha: first, depth: 1, submodules: false, tags: false }, plain),
          shell,
        );
        assert.equal(p.code, 0, p.stderr);
        assert.deepEqual(readCloneReply(p.stdout), { ok: true, head: first });
        assert.equal(git(plain, "tag", "--list"), "");
        assert.equal(git(plain, "rev-list", "--count", "HEAD"), "1");
      },
    );

    it(`under ${name}: a commit the server does not have is the fetch step's failure, tags or not`, { skip }, () => {
      const r = runClone(
        buildGitCloneCommand(
          { url: `file://${repo}`, sha: "0".repeat(40), depth: 1, submodules: false, tags: true },
          fresh(),
        ),
        shell,
      );
      assert.equal(r.code, 1);
      assert.deepEqual(readCloneReply(r.stdout), { ok: false, step: "fetch", code: 128 });
    });
  }

  it("probes for git with an exit of 0 either way, printing the tag only when git is on the PATH", () => {
    const [sh, ...args] = buildGitProbeCommand();
    const found = spawnSync(sh!, args, { encoding: "utf8" });
    assert.equal(found.status, 0);
    assert.equal(found.stdout.trim(), GIT_FOUND_TAG);
    assert.equal(sh, "sh");
    const without = spawnSync("/bin/sh", args, { encoding: "utf8", env: { PATH: "/nonexistent" } });
    assert.equal(without.status, 0);
    assert.equal(without.stdout, "");
  });
});
