// Tests the host GNU tar path: the probe, the argv, and archives packed from a scan, extracted by GNU and busybox tar.
import { mkdir, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  buildHostTarArgs,
  parseGnuTarVersion,
  parseTotalBytes,
  probeHostTar,
  spawnHostTar,
  stoppedByReader,
  tarComplaints,
  type HostTar,
} from "../../src/transfer/host-tar.js";
import { scanTree } from "../../src/transfer/scan-tree.js";
import { FILE_MTIME, LONG_TARGET, makeHardNamesTree } from "./hard-names-tree.js";
import {
  collectStream,
  depthFirstSorted,
  makeTempDir,
  readWithTarStream,
  runWithInput,
  snapshotFromMembers,
  snapshotTree,
  type SnapshotEntry,
} from "./tree-helpers.js";

describe("parseGnuTarVersion", () => {
  it("accepts GNU tar 1.29 and later", () => {
    assert.equal(parseGnuTarVersion("tar (GNU tar) 1.34\nCopyright (C) 2021 Free Software Foundation, Inc.\n"), "1.34");
    assert.equal(parseGnuTarVersion("tar (GNU tar) 1.29\n"), "1.29");
    assert.equal(parseGnuTarVersion("tar (GNU tar) 2.0\n"), "2.0");
  });

  it("refuses GNU tar before 1.29 (no --verbatim-files-from), bsdtar, busybox and nothing", () => {
    for (const text of [
      "tar (GNU tar) 1.28\n",
      "bsdtar 3.6.2 - libarchive 3.6.2\n",
      "tar (busybox) 1.36.1\n",
      "BusyBox v1.36.1 multi-call binary.\n",
      "",
    ]) {
      assert.equal(parseGnuTarVersion(text), undefined, JSON.stringify(text));
    }
  });
});

describe("probeHostTar", () => {
  let workspace: string;

  before(async () => {
    workspace = await makeTempDir("host-tar-probe");
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it("finds this machine's GNU tar", async () => {
    const found = await probeHostTar({ binary: "tar", env: process.env });
    assert.match(found?.version ?? "", /^\d+\.\d+$/);
    assert.equal(found?.binary, "tar");
  });

  it("answers undefined for a binary that does not exist, one that fails, and a tar that is not GNU tar", async () => {
    const failing = join(workspace, "failing-tar");
    const bsd = join(workspace, "bsd-tar");
    await writeFile(failing, "#!/bin/sh\necho 'tar (GNU tar) 1.34'\nexit 1\n", { mode: 0o755 });
    await writeFile(bsd, "#!/bin/sh\necho 'bsdtar 3.6.2 - libarchive 3.6.2'\n", { mode: 0o755 });
    for (const binary of [join(workspace, "no-such-tar"), failing, bsd])
      assert.equal(await probeHostTar({ binary, env: process.env }), undefined, binary);
  });

  it("leaves no timer behind when the binary does not exist (it kept a process with nothing else to do up for 5 s)", async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
    const before = timers();
    assert.equal(await probeHostTar({ binary: join(workspace, "absent-tar"), env: process.env }), undefined);
    await new Promise((resolve) => setImmediate(resolve)); // the spawn's error and close are delivered by now
    assert.equal(timers(), before);
  });
});

describe("stoppedByReader", () => {
  it("tells a tar stopped by a closed pipe or socket from one that failed on its own", () => {
    assert.ok(stoppedByReader({ exitCode: null, signal: "SIGPIPE", stderr: "" }));
    assert.ok(
      stoppedByReader({
        exitCode: 2,
        signal: null,
        stderr: "tar: -: Cannot write: Broken pipe\ntar: Error is not recoverable: exiting now\n",
      }),
    );
    assert.ok(
      stoppedByReader({ exitCode: 2, signal: null, stderr: "tar: -: Cannot write: Connection reset by peer\n" }),
    );
    assert.ok(!stoppedByReader({ exitCode: 2, signal: null, stderr: "tar: work/a: Cannot open: Permission denied\n" }));
    assert.ok(!stoppedByReader({ exitCode: null, signal: "SIGKILL", stderr: "" }));
  });
});

describe("buildHostTarArgs", () => {
  it("packs exactly the NUL-separated names read from stdin, verbatim, without recursing, owned by 0:0", () => {
    const args = buildHostTarArgs("/tmp/staging");
    for (const flag of [
      "--create",
      "--file=-",
      "--format=gnu",
      "--no-recursion",
      "--null",
      "--verbatim-files-from",
      "--no-unquote",
      "--hard-dereference",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--totals",
      "--blocking-factor=128",
    ]) {
      assert.ok(args.includes(flag), flag);
    }
    assert.deepEqual(args.slice(-2), ["--directory=/tmp/staging", "--files-from=-"]);
  });
});

describe("parseTotalBytes and tarComplaints", () => {
  it("reads the archive size from --totals and leaves that line out of the complaints", () => {
    const stderr = "tar: work/a: file changed as we read it\nTotal bytes written: 20480 (20KiB, 9.8MiB/s)\n";
    assert.equal(parseTotalBytes(stderr), 20480);
    assert.equal(tarComplaints(stderr), "tar: work/a: file changed as we read it");
    assert.equal(parseTotalBytes("tar: something else\n"), undefined);
  });
});

describe("spawnHostTar", () => {
  let workspace = "";
  let layout = "";
  let expected: Map<string, SnapshotEntry>;
  let tar: HostTar;

  before(async () => {
    workspace = await makeTempDir("host-tar");
    const source = join(workspace, "source");
    await makeHardNamesTree(source);
    expected = await snapshotTree(source);
    expected.delete("skipped-fifo");
    // The upload's staging layout: the checkout reached through a link named like its archive prefix.
    layout = join(workspace, "layout");
    await mkdir(layout);
    await symlink(source, join(layout, "work"));
    const found = await probeHostTar({ binary: "tar", env: process.env });
    assert.ok(found, "these tests need GNU tar on the host");
    tar = found;
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  /** Packs the scan of the layout's `work` link with the host tar; resolves with the archive and tar's exit. */
  async function packScan(): Promise<{
    archive: Buffer;
    exit: Awaited<ReturnType<typeof spawnHostTar>["exited"]>;
    entries: number;
  }> {
    const scan = scanTree(join(layout, "work"), "work");
    const packed = spawnHostTar(tar, layout, [scan.names]);
    const [archive, exit] = await Promise.all([collectStream(packed.stdout), packed.exited]);
    return { archive, exit, entries: scan.entries };
  }

  for (const [label, command] of [
    ["GNU tar", ["tar"]],
    ["busybox tar", ["/bin/busybox", "tar"]],
  ] as const) {
    it(`packs a tree that ${label} extracts byte for byte: long, deep, unicode and newline names, empty dirs, symlinks, modes and mtimes`, async () => {
      const { archive, exit } = await packScan();
      assert.equal(exit.exitCode, 0, exit.stderr);
      const dest = join(workspace, `out-${label.replace(/\W/g, "-")}`);
      await mkdir(dest);
      const result = await runWithInput(command[0], [...command.slice(1), "-xf", "-", "-C", dest], archive);
      assert.equal(result.code, 0, result.stderr);
      const extracted = await snapshotTree(join(dest, "work"));
      assert.deepEqual(extracted, expected);
      assert.equal(extracted.get("modes/private.txt")?.mode, 0o600);
      assert.equal(extracted.get("five-mib.bin")?.mtimeSeconds, FILE_MTIME.getTime() / 1000);
      assert.equal(extracted.get("link-long-target")?.target, LONG_TARGET);
    });
  }

  it("writes the members in the scan's order, owned by 0:0 without names, and reports the archive's size", async () => {
    const { archive, exit, entries } = await packScan();
    const members = await readWithTarStream(archive);
    assert.deepEqual(snapshotFromMembers(members, "work"), expected);
    assert.equal(members.length, entries);
    const names = members.map(({ header }) => header.name.slice("work/".length).replace(/\/$/, ""));
    assert.deepEqual(names, depthFirstSorted([...expected.keys()]));
    assert.ok(members.every(({ header }) => header.uid === 0 && header.gid === 0 && !header.uname && !header.gname));
    assert.equal(parseTotalBytes(exit.stderr), archive.length);
  });

  it("writes 64 KiB records, so that the archive goes into kubectl in few large writes", async () => {
    // One small file: the whole archive is one record, padded to the record size (tar's default is 10 KiB).
    const small = join(workspace, "small");
    await mkdir(join(small, "work"), { recursive: true });
    await writeFile(join(small, "work", "a.txt"), "a\n");
    const packed = spawnHostTar(tar, small, [scanTree(join(small, "work"), "work").names]);
    const [archive, exit] = await Promise.all([collectStream(packed.stdout), packed.exited]);
    assert.equal(exit.exitCode, 0, exit.stderr);
    assert.equal(archive.length, 65536);
  });

  it("takes every listed name literally: no globbing, no backslash unquoting", async () => {
    const dir = join(workspace, "literal");
    await mkdir(dir);
    for (const name of ["a*", "ab", "x[1]", "x1", "b\\nc", "b\nc"]) await writeFile(join(dir, name), name);
    const literalLayout = join(workspace, "literal-layout");
    await mkdir(literalLayout);
    await symlink(dir, join(literalLayout, "work"));
    const listed = ["work/a*", "work/x[1]", "work/b\\nc"];
    const packed = spawnHostTar(tar, literalLayout, [Buffer.from(`${listed.join("\0")}\0`)]);
    const [archive, exit] = await Promise.all([collectStream(packed.stdout), packed.exited]);
    assert.equal(exit.exitCode, 0, exit.stderr);
    assert.deepEqual(
      (await readWithTarStream(archive)).map(({ header }) => header.name),
      listed,
    );
  });

  it("runs tar with the setting's environment (not the process's), its messages forced into the C locale", async () => {
    const envTar = join(workspace, "env-tar");
    await writeFile(envTar, '#!/bin/sh\necho "LC_ALL=$LC_ALL FROM=$FROM_SETTING" >&2\n', { mode: 0o755 });
    const packed = spawnHostTar(
      { binary: envTar, version: "1.34", env: { PATH: process.env.PATH, FROM_SETTING: "yes", LC_ALL: "de_DE.UTF-8" } },
      workspace,
      [],
    );
    const [, exit] = await Promise.all([collectStream(packed.stdout), packed.exited]);
    assert.equal(exit.stderr, "LC_ALL=C FROM=yes\n");
  });

  it("exits 2 naming the file when a listed file vanished after the scan", async () => {
    const dir = join(workspace, "vanishing");
    await mkdir(dir);
    await writeFile(join(dir, "stays.txt"), "x");
    await writeFile(join(dir, "goes.txt"), "y");
    const vanishLayout = join(workspace, "vanish-layout");
    await mkdir(vanishLayout);
    await symlink(dir, join(vanishLayout, "work"));
    const scan = scanTree(join(vanishLayout, "work"), "work");
    await unlink(join(dir, "goes.txt"));
    const packed = spawnHostTar(tar, vanishLayout, [scan.names]);
    const [, exit] = await Promise.all([collectStream(packed.stdout), packed.exited]);
    assert.equal(exit.exitCode, 2);
    assert.match(tarComplaints(exit.stderr), /work\/goes\.txt: Cannot stat: No such file or directory/);
  });

  it("stops, and says it was stopped by its reader, when whoever reads the archive goes away", async () => {
    const dir = join(workspace, "big");
    await mkdir(dir);
    await writeFile(join(dir, "big.bin"), Buffer.alloc(8 * 1024 * 1024, 1));
    const bigLayout = join(workspace, "big-layout");
    await mkdir(bigLayout);
    await symlink(dir, join(bigLayout, "work"));
    const packed = spawnHostTar(tar, bigLayout, [scanTree(join(bigLayout, "work"), "work").names]);
    packed.stdout.once("data", () => packed.stdout.destroy());
    const exit = await packed.exited;
    assert.notEqual(exit.exitCode, 0);
    assert.ok(stoppedByReader(exit), `signal ${exit.signal}, stderr ${exit.stderr}`);
  });
});
