// The hard-names tree the packer and host-tar round trips pack: long, deep, unicode and newline names, boundary
// sizes, empty directories, symlinks, modes, mtimes and one fifo (skipped-fifo) that must be left out.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runWithInput } from "./tree-helpers.js";

export const FILE_MTIME = new Date("2023-02-03T04:05:06Z");
const DEEP_COMPONENT = "d".repeat(120);
/** 28 directories of 121 bytes: a relative path of about 3,400 bytes, within PATH_MAX with the temp dir in front. */
const DEEP_DIR = Array.from(
  { length: 28 },
  (_, index) => `${DEEP_COMPONENT.slice(2)}${String(index).padStart(2, "0")}`,
).join("/");
const OVER_256_DIR = ["a".repeat(100), "b".repeat(100), "c".repeat(100)].join("/");
export const LONG_TARGET = `${DEEP_DIR}/deep-file.txt`;

/** Files of the hard-names tree: relative path → content. */
const FILES: ReadonlyArray<readonly [string, Buffer]> = [
  ["empty", Buffer.alloc(0)],
  ["one-block.bin", randomBytes(512)],
  ["small-256k.bin", randomBytes(256 * 1024)],
  ["small-256k-plus-1.bin", randomBytes(256 * 1024 + 1)],
  ["five-mib.bin", randomBytes(5 * 1024 * 1024)],
  ["ünïcødé-日本語-😀.txt", Buffer.from("unicode name\n")],
  ["line\nbreak.txt", Buffer.from("a newline in the name\n")],
  ["dir\nwith newline/inner.txt", Buffer.from("inside a directory with a newline\n")],
  [`${"c".repeat(200)}.txt`, Buffer.from("one 204-byte component\n")],
  [`${OVER_256_DIR}/${"f".repeat(100)}`, Buffer.from("a path over 256 bytes\n")],
  [`${"p".repeat(150)}/${"n".repeat(100)}`, Buffer.from("a path that just splits into prefix and name\n")],
  [`${DEEP_DIR}/deep-file.txt`, Buffer.from("deep\n")],
  ["modes/private.txt", Buffer.from("0600\n")],
  ["modes/script.sh", Buffer.from("#!/bin/sh\n")],
];

/** Builds the tree every round trip here packs: hard names, boundary sizes, empty dirs, symlinks, modes. */
export async function makeHardNamesTree(dir: string): Promise<void> {
  for (const [path, content] of FILES) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), content);
    await utimes(join(dir, path), FILE_MTIME, FILE_MTIME);
  }
  await chmod(join(dir, "modes/private.txt"), 0o600);
  await chmod(join(dir, "modes/script.sh"), 0o755);
  await mkdir(join(dir, "empty-dir"));
  await mkdir(join(dir, "nested-empty/a/b"), { recursive: true });
  await mkdir(join(dir, "modes/private-dir"), { mode: 0o700 });
  await chmod(join(dir, "modes/private-dir"), 0o700);
  await symlink(LONG_TARGET, join(dir, "link-long-target"));
  await symlink("ünïcødé-日本語-😀.txt", join(dir, "link-unicode"));
  await symlink("dir\nwith newline", join(dir, "link\nnewline"));
  await runWithInput("mkfifo", [join(dir, "skipped-fifo")], Buffer.alloc(0));
}
