// Host-side parts of a transfer, each alone against its plain tar counterpart: packing the checkout, extracting outputs.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { extractOutputs } from "../src/transfer/extract-outputs.js";
import { packTrees } from "../src/transfer/pack-tree.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export interface TransferParts {
  /** packTrees of the checkout into a sha256 and nowhere else (what the upload does on the host, minus kubectl). */
  readonly packMs: number;
  /** `tar -cf - -C DIR . | cat > /dev/null`. */
  readonly tarPackMs: number;
  /** `tar -cf - -C DIR .` into a sha256 and extractOutputs (what the download does on the host, minus kubectl). */
  readonly extractMs: number;
  /** `tar -cf - -C DIR . | tar -xf - -C DEST`. */
  readonly tarExtractMs: number;
}

async function timePack(dir: string): Promise<number> {
  const started = process.hrtime.bigint();
  const hash = createHash("sha256");
  const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
  await pipeline(stream, new Writable({ write: (chunk: Buffer, _encoding, callback) => (hash.update(chunk), callback()) }));
  await done;
  hash.digest("hex");
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function timeExtract(dir: string, dest: string, bytes: number): Promise<number> {
  const started = process.hrtime.bigint();
  const tar = spawn("tar", ["-cf", "-", "-C", dir, "."], { stdio: ["ignore", "pipe", "inherit"] });
  const hash = createHash("sha256");
  const tap = new Transform({ transform: (chunk: Buffer, _encoding, callback) => (hash.update(chunk), callback(null, chunk)) });
  tar.stdout.pipe(tap);
  const exited = new Promise<number | null>((resolve) => tar.once("close", resolve));
  const report = await extractOutputs(tap, dest, { maxBytes: bytes * 2, maxEntries: 1_000_000 });
  const code = await exited;
  hash.digest("hex");
  if (code !== 0 || report.refused.length > 0) throw new Error(`extract part: tar exited ${code}, ${report.refused.length} refused`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Measures the four parts once, in this process (the bench's own node), cleaning up what it extracted. */
export async function measureTransferParts(dir: string, workDir: string, bytes: number): Promise<TransferParts> {
  const dest = join(workDir, "parts-extract");
  const packMs = await timePack(dir);
  const tarPack = await runTimed("sh", ["-c", 'tar -cf - -C "$1" . | cat > /dev/null', "sh", dir]);
  assertSucceeded("tar pack part", tarPack);
  await mkdir(dest, { recursive: true });
  const extractMs = await timeExtract(dir, dest, bytes);
  await rm(dest, { recursive: true, force: true });
  await mkdir(dest, { recursive: true });
  const tarExtract = await runTimed("sh", ["-c", 'tar -cf - -C "$1" . | tar -xf - -C "$2"', "sh", dir, dest]);
  assertSucceeded("tar extract part", tarExtract);
  await rm(dest, { recursive: true, force: true });
  return { packMs, tarPackMs: tarPack.wallMs, extractMs, tarExtractMs: tarExtract.wallMs };
}
