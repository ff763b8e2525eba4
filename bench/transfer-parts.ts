// Host-side parts of a transfer, each alone against its plain tar counterpart: packing the checkout, extracting outputs.
import { spawn } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { extractOutputs } from "../src/transfer/extract-outputs.js";
import { packTrees } from "../src/transfer/pack-tree.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export interface TransferParts {
  /** packTrees of the checkout into a byte-counting sink (what the upload does on the host, minus kubectl). */
  readonly packMs: number;
  /** `tar -cf - -C DIR . | cat > /dev/null`. */
  readonly tarPackMs: number;
  /** `tar -cf - -C DIR .` into extractOutputs (what the download does on the host, minus kubectl). */
  readonly extractMs: number;
  /** `tar -cf - -C DIR . | tar -xf - -C DEST`. */
  readonly tarExtractMs: number;
}

async function timePack(dir: string): Promise<number> {
  const started = process.hrtime.bigint();
  let bytes = 0;
  const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
  await pipeline(
    stream,
    new Writable({ write: (chunk: Buffer, _encoding, callback) => ((bytes += chunk.length), callback()) }),
  );
  if ((await done).archiveBytes !== bytes)
    throw new Error(`pack part: packTrees reported ${(await done).archiveBytes} bytes, the sink got ${bytes}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function timeExtract(dir: string, dest: string, bytes: number): Promise<number> {
  const started = process.hrtime.bigint();
  const tar = spawn("tar", ["-cf", "-", "-C", dir, "."], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | null>((resolve) => tar.once("close", resolve));
  const report = await extractOutputs(tar.stdout, dest, { maxBytes: bytes * 2, maxEntries: 1_000_000 });
  const code = await exited;
  if (code !== 0 || report.refused.length > 0)
    throw new Error(`extract part: tar exited ${code}, ${report.refused.length} refused`);
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
