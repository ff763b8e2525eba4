// Test helpers for the tar transfer tests: temp dirs, tree snapshots, child tar processes, archive builders.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, lstat, mkdtemp, readFile, readdir, readlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import assert from "node:assert/strict";
import * as tarStream from "tar-stream";

/** One path of a snapshot; fields that do not apply to the kind are absent. */
export interface SnapshotEntry {
  readonly kind: "file" | "directory" | "symlink" | "other";
  readonly mode: number;
  readonly sha256?: string;
  readonly target?: string;
  readonly mtimeSeconds?: number;
}

export type EntryHeader = Parameters<tarStream.Pack["entry"]>[0];

/** One entry of an archive built in a test: a header and optional content. */
export interface ArchiveEntry {
  readonly header: EntryHeader;
  readonly content?: string | Buffer;
}

/** Creates a fresh temp directory that other users may traverse (needed when a child drops to nobody). */
export async function makeTempDir(label: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `knotless-${label}-`));
  await chmod(dir, 0o755);
  return dir;
}

/** Maps every path under `root` (relative, posix) to its kind, permission bits, content hash or target. */
export async function snapshotTree(root: string): Promise<Map<string, SnapshotEntry>> {
  const snapshot = new Map<string, SnapshotEntry>();
  const visit = async (relative: string): Promise<void> => {
    const names = (await readdir(join(root, relative))).sort();
    for (const name of names) {
      const path = relative === "" ? name : `${relative}/${name}`;
      const absolute = join(root, path);
      const info = await lstat(absolute);
      const mode = info.mode & 0o7777;
      if (info.isDirectory()) {
        snapshot.set(path, { kind: "directory", mode });
        await visit(path);
      } else if (info.isFile()) {
        const sha256 = sha256Of(await readFile(absolute));
        snapshot.set(path, { kind: "file", mode, sha256, mtimeSeconds: Math.floor(info.mtimeMs / 1000) });
      } else if (info.isSymbolicLink()) {
        snapshot.set(path, { kind: "symlink", mode: 0, target: await readlink(absolute) });
      } else {
        snapshot.set(path, { kind: "other", mode });
      }
    }
  };
  await visit("");
  return snapshot;
}

/** Hex sha256 of a buffer or string. */
export function sha256Of(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** Runs a command with `input` piped to its stdin; resolves with its exit code, stdout and stderr. */
export function runWithInput(
  command: string,
  args: readonly string[],
  input: Readable | Buffer,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.on("error", () => undefined);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    if (Buffer.isBuffer(input)) child.stdin.end(input);
    else input.pipe(child.stdin);
  });
}

/** Reads a whole stream into one buffer. */
export async function collectStream(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Builds a tar archive in memory with tar-stream's pack, entries in the given order. */
export async function buildArchive(entries: readonly ArchiveEntry[]): Promise<Buffer> {
  const pack = tarStream.pack();
  const collected = collectStream(Readable.from(pack, { objectMode: false }));
  for (const entry of entries) {
    await new Promise<void>((resolve, reject) => {
      const callback = (error?: Error | null): void => (error ? reject(error) : resolve());
      if (entry.content === undefined) pack.entry({ ...entry.header }, callback);
      else pack.entry({ ...entry.header }, entry.content, callback);
    });
  }
  pack.finalize();
  return collected;
}

/**
 * A source that produces `prefix` entries and then one file entry declaring `declaredSize` bytes whose
 * content never runs out in practice; it stops only when destroyed.
 */
export function endlessFileArchive(prefix: readonly ArchiveEntry[], name: string, declaredSize: number): Readable {
  const pack = tarStream.pack();
  const produce = async (): Promise<void> => {
    for (const entry of prefix) pack.entry({ ...entry.header }, entry.content ?? "");
    const sink = pack.entry({ name, size: declaredSize, mode: 0o644 });
    sink.on("error", () => undefined);
    const chunk = Buffer.alloc(64 * 1024, 7);
    while (!pack.destroying && !sink.destroying) {
      if (!sink.write(chunk)) await waitForDrainOrClose(sink);
    }
  };
  void produce().catch(() => undefined);
  return Readable.from(pack, { objectMode: false });
}

/** A source that produces small file entries forever; it stops only when destroyed. */
export function endlessEntriesArchive(): Readable {
  const pack = tarStream.pack();
  const produce = async (): Promise<void> => {
    for (let index = 0; !pack.destroying; index += 1) {
      await new Promise<void>((resolve) => {
        pack.entry({ name: `./many/f${index}.txt`, mode: 0o644 }, `file ${index}`, () => resolve());
      });
    }
  };
  void produce().catch(() => undefined);
  return Readable.from(pack, { objectMode: false });
}

function waitForDrainOrClose(sink: ReturnType<tarStream.Pack["entry"]>): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      sink.off("drain", done);
      sink.off("close", done);
      resolve();
    };
    sink.once("drain", done);
    sink.once("close", done);
  });
}

/** An archive's members as read by tar-stream, with their content. */
export async function readWithTarStream(
  archive: Buffer,
): Promise<Array<{ header: tarStream.Header; content: Buffer }>> {
  const extract = tarStream.extract();
  Readable.from([archive]).pipe(extract);
  const members: Array<{ header: tarStream.Header; content: Buffer }> = [];
  for await (const entry of extract)
    members.push({ header: entry.header, content: await collectStream(entry as unknown as Readable) });
  return members;
}

/** The snapshot tar-stream's view of an archive amounts to, for the members under `prefix/`. */
export function snapshotFromMembers(
  members: ReadonlyArray<{ header: tarStream.Header; content: Buffer }>,
  prefix: string,
): Map<string, SnapshotEntry> {
  const snapshot = new Map<string, SnapshotEntry>();
  for (const { header, content } of members) {
    assert.ok(header.name.startsWith(`${prefix}/`), header.name);
    const path = header.name.slice(prefix.length + 1).replace(/\/$/, "");
    const mode = header.mode & 0o7777;
    if (header.type === "directory") snapshot.set(path, { kind: "directory", mode });
    else if (header.type === "symlink") snapshot.set(path, { kind: "symlink", mode: 0, target: header.linkname });
    else if (header.type === "file")
      snapshot.set(path, {
        kind: "file",
        mode,
        sha256: sha256Of(content),
        mtimeSeconds: header.mtime.getTime() / 1000,
      });
    else snapshot.set(path, { kind: "other", mode });
  }
  return snapshot;
}

/** Relative paths in the walk's order: depth first, names sorted at each level (by UTF-16 code units). */
export function depthFirstSorted(paths: readonly string[]): string[] {
  const split = paths.map((path) => path.split("/"));
  split.sort((left, right) => {
    for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
      const a = left[index] ?? "";
      const b = right[index] ?? "";
      if (a !== b) return a < b ? -1 : 1;
    }
    return left.length - right.length;
  });
  return split.map((parts) => parts.join("/"));
}
