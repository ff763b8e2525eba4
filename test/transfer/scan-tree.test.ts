// Tests scanTree: the upload's member list and counts, made before the run touches the cluster.
import { spawn } from "node:child_process";
import { chmod, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ScanError, scanTree, scanUploadTrees } from "../../src/transfer/scan-tree.js";
import { InputError } from "../../src/core/errors.js";
import { collectStream, makeTempDir, runWithInput } from "./tree-helpers.js";
import { findNobodySkipReason } from "../support/nobody.js";

/** The NUL-terminated names of a scan as a list. */
function namesOf(names: Buffer): string[] {
  const text = names.toString("utf8");
  assert.ok(text === "" || text.endsWith("\0"), "every name ends with a NUL byte");
  return text === "" ? [] : text.slice(0, -1).split("\0");
}

describe("scanTree", () => {
  let workspace: string;

  before(async () => {
    workspace = await makeTempDir("scan-tree");
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it("lists names that take several times the first buffer's 64 KiB, multi-byte characters included", async () => {
    const dir = join(workspace, "many-long-names");
    await mkdir(dir);
    const names = Array.from({ length: 800 }, (_, index) => `${String(index).padStart(4, "0")}-${"é日".repeat(40)}`);
    await Promise.all(names.map((name) => writeFile(join(dir, name), "")));
    const scan = scanTree(dir, "work");
    assert.ok(scan.names.length > 2 * 64 * 1024, `${scan.names.length} bytes of names`);
    assert.deepEqual(
      namesOf(scan.names),
      names.map((name) => `work/${name}`),
    );
  });

  it("lists every member under the archive prefix, depth first in sorted name order, and counts them", async () => {
    const dir = join(workspace, "plain");
    await mkdir(join(dir, "src/lib"), { recursive: true });
    await mkdir(join(dir, "empty"));
    await writeFile(join(dir, "README"), "readme\n");
    await writeFile(join(dir, "src/main.c"), "int main;\n");
    await writeFile(join(dir, "src/lib/a.c"), "a\n");
    await writeFile(join(dir, "Z-upper"), "sorted before lowercase\n");
    const scan = scanTree(dir, "work");
    assert.deepEqual(namesOf(scan.names), [
      "work/README",
      "work/Z-upper",
      "work/empty",
      "work/src",
      "work/src/lib",
      "work/src/lib/a.c",
      "work/src/main.c",
    ]);
    assert.deepEqual(
      {
        files: scan.files,
        dirs: scan.dirs,
        symlinks: scan.symlinks,
        entries: scan.entries,
        nameNewlines: scan.nameNewlines,
        skipped: scan.skipped,
      },
      { files: 4, dirs: 3, symlinks: 0, entries: 7, nameNewlines: 0, skipped: [] },
    );
  });

  it("lists symlinks as members without following them, even one to a directory outside the tree", async () => {
    const dir = join(workspace, "links");
    await mkdir(dir);
    await writeFile(join(dir, "target.txt"), "t\n");
    await symlink("target.txt", join(dir, "to-file"));
    await symlink("/etc", join(dir, "to-etc"));
    await symlink("missing", join(dir, "dangling"));
    const scan = scanTree(dir, "work");
    assert.deepEqual(namesOf(scan.names), ["work/dangling", "work/target.txt", "work/to-etc", "work/to-file"]);
    assert.equal(scan.symlinks, 3);
    assert.equal(scan.files, 1);
  });

  it("leaves fifos and sockets out and says what each one is", async () => {
    const dir = join(workspace, "specials");
    await mkdir(dir);
    await writeFile(join(dir, "kept.txt"), "kept\n");
    await runWithInput("mkfifo", [join(dir, "a-fifo")], Buffer.alloc(0));
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(dir, "a-socket"), resolve));
    try {
      const scan = scanTree(dir, "work");
      assert.deepEqual(namesOf(scan.names), ["work/kept.txt"]);
      assert.deepEqual(scan.skipped, [
        { path: join(dir, "a-fifo"), reason: "fifo cannot be archived" },
        { path: join(dir, "a-socket"), reason: "socket cannot be archived" },
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("counts the newlines in member paths the way find prints them, a directory's in each member under it", async () => {
    const dir = join(workspace, "newlines");
    await mkdir(join(dir, "two\nlines"), { recursive: true });
    await writeFile(join(dir, "two\nlines", "in\nside"), "x");
    await writeFile(join(dir, "plain"), "x");
    const scan = scanTree(dir, "work");
    // "two\nlines" (1) and "two\nlines/in\nside" (2): find prints 3 extra lines for them.
    assert.equal(scan.nameNewlines, 3);
    assert.deepEqual(namesOf(scan.names), ["work/plain", "work/two\nlines", "work/two\nlines/in\nside"]);
  });

  it("gives an empty list and zero counts for an empty directory", async () => {
    const dir = join(workspace, "empty-root");
    await mkdir(dir);
    const scan = scanTree(dir, "steps");
    assert.equal(scan.names.length, 0);
    assert.equal(scan.entries, 0);
  });

  it("throws a ScanError, which is bad input, naming a root that does not exist", () => {
    const missing = join(workspace, "no-such-dir");
    assert.throws(
      () => scanTree(missing, "work"),
      (error: unknown) =>
        error instanceof ScanError &&
        error instanceof InputError &&
        error.path === missing &&
        /^cannot upload .*no-such-dir: ENOENT: no such file or directory$/.test(error.message),
    );
  });

  it(
    "names an unreadable file and an unreadable directory, checked as an unprivileged user",
    { skip: findNobodySkipReason() },
    async () => {
      const dir = join(workspace, "unreadable");
      await mkdir(join(dir, "closed-dir"), { recursive: true });
      await writeFile(join(dir, "closed-dir", "inside.txt"), "x");
      await writeFile(join(dir, "secret.txt"), "no access");
      await chmod(join(dir, "secret.txt"), 0o000);
      await chmod(join(dir, "closed-dir"), 0o000);
      try {
        const dirError = await scanAsUnprivilegedUser(dir);
        assert.deepEqual(dirError, {
          name: "InputError",
          path: join(dir, "closed-dir"),
          message: `cannot upload ${join(dir, "closed-dir")}: EACCES: permission denied`,
        });
        await chmod(join(dir, "closed-dir"), 0o755);
        const fileError = await scanAsUnprivilegedUser(dir);
        assert.deepEqual(fileError, {
          name: "InputError",
          path: join(dir, "secret.txt"),
          message: `cannot upload ${join(dir, "secret.txt")}: EACCES: permission denied`,
        });
      } finally {
        await chmod(join(dir, "closed-dir"), 0o755);
      }
    },
  );
});

describe("scanUploadTrees", () => {
  it("scans the checkout under work and the shared steps under steps, and no shared steps when there are none", async () => {
    const checkout = await makeTempDir("scan-checkout");
    const shared = await makeTempDir("scan-shared");
    try {
      await writeFile(join(checkout, "a.txt"), "a");
      await writeFile(join(shared, "lint.sh"), "true");
      const both = scanUploadTrees(checkout, shared);
      assert.deepEqual(namesOf(both.work.names), ["work/a.txt"]);
      assert.deepEqual(namesOf(both.steps!.names), ["steps/lint.sh"]);
      assert.equal(scanUploadTrees(checkout, undefined).steps, undefined);
    } finally {
      await rm(checkout, { recursive: true, force: true });
      await rm(shared, { recursive: true, force: true });
    }
  });
});

/** Scans `dir` in a child process as nobody when the tests run as root (root reads everything); the error it threw. */
async function scanAsUnprivilegedUser(dir: string): Promise<{ name: string; path: string; message: string }> {
  const modulePath = new URL("../../src/transfer/scan-tree.js", import.meta.url).pathname;
  const script = `
    const { scanTree } = await import(${JSON.stringify(modulePath)});
    let error;
    try { scanTree(${JSON.stringify(dir)}, "work"); } catch (thrown) { error = { name: thrown.name, path: thrown.path, message: thrown.message }; }
    process.stdout.write(JSON.stringify(error ?? null));
  `;
  const runAsNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    ...runAsNobody,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const output = JSON.parse((await collectStream(child.stdout)).toString()) as {
    name: string;
    path: string;
    message: string;
  } | null;
  assert.ok(output !== null, "the scan should have thrown");
  return output;
}
