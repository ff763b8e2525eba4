// Reads what the PVC cache backend's in-pod commands print (src/cache/pvc-scripts.ts) into typed outcomes; pure.
import type { CacheEntry } from "../workflow/cache-types.js";
import { hashCacheName, PVC_META_VERSION_LINE } from "../pod/pvc-layout.js";
import { PVC_RESULT_TAG } from "./pvc-scripts.js";

/** A command's output that does not end with its result line (a cut exec, a shell without a needed tool). */
export class PvcOutputError extends Error {
  override readonly name = "PvcOutputError";
}

/** What one command of the in-pod side ended with: its exit code, stdout and stderr. */
export interface PvcCommandOutput {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export type PvcRestoreOutcome =
  | { readonly kind: "restored"; readonly bytes: number }
  | { readonly kind: "missing" }
  /** The entry needs a decompressor the image lacks (a zstd entry, an image without zstd); nothing was read. */
  | { readonly kind: "no-decoder"; readonly compression: string }
  /** The archive did not match its metadata; the pod removed the entry. */
  | { readonly kind: "corrupt"; readonly reason: string }
  | { readonly kind: "failed"; readonly reason: string };

export type PvcSaveOutcome =
  | { readonly kind: "saved"; readonly bytes: number; readonly sha256: string }
  /** Another save of the key came first (or was there already): nothing changed. */
  | { readonly kind: "exists" }
  /** None of the paths existed: nothing to save. */
  | { readonly kind: "empty" }
  | { readonly kind: "too-large"; readonly bytes: number; readonly maxBytes: number }
  | { readonly kind: "failed"; readonly reason: string };

export interface PvcEvictOutcome {
  readonly evicted: number;
  readonly freedBytes: number;
  /** What the claim's archives take after the eviction. */
  readonly keptBytes: number;
}

/** The words after the tag on the last line of stdout, which must be the result line of a command that exited 0. */
function readResult(output: PvcCommandOutput, command: string): { word: string; rest: string } {
  const lines = output.stdout.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const last = lines.at(-1) ?? "";
  const said = output.stderr.trim() ? `: ${output.stderr.trim().split("\n").slice(-3).join("; ")}` : "";
  if (output.exitCode !== 0) throw new PvcOutputError(`the cache ${command} command exited ${output.exitCode}${said}`);
  if (!last.startsWith(`${PVC_RESULT_TAG} `))
    throw new PvcOutputError(`the cache ${command} command ended without its result line${said}`);
  const text = last.slice(PVC_RESULT_TAG.length + 1);
  const space = text.indexOf(" ");
  return space < 0 ? { word: text, rest: "" } : { word: text.slice(0, space), rest: text.slice(space + 1) };
}

function readCount(text: string | undefined, what: string): number {
  if (text === undefined || !/^\d+$/.test(text))
    throw new PvcOutputError(`the cache command printed ${JSON.stringify(text ?? "")} where ${what} belongs`);
  return Number(text);
}

function unexpected(command: string, word: string): never {
  throw new PvcOutputError(`the cache ${command} command said ${JSON.stringify(word)}, which no version of it says`);
}

/**
 * The entries of `repo` a list printed, for selectEntry. An entry whose metadata is incomplete or disagrees with its
 * file name (another repository's, a key that does not hash to the name) is left out: it cannot be restored safely.
 */
export function parsePvcList(output: PvcCommandOutput, repo: string): CacheEntry[] {
  const { word, rest } = readResult(output, "list");
  if (word !== "listed") unexpected("list", word);
  const listed = readCount(rest, "the number of entries");
  const lines = output.stdout.split("\n");
  if (lines.at(-1) === "") lines.pop();
  lines.pop();
  const blocks: { hash: string; usedAt: number; fields: Map<string, string> }[] = [];
  for (const line of lines) {
    const entry = /^entry ([0-9a-f]{64}) (\d+)$/.exec(line);
    if (entry) {
      blocks.push({ hash: entry[1]!, usedAt: Number(entry[2]) * 1000, fields: new Map() });
      continue;
    }
    const block = blocks.at(-1);
    if (!block) throw new PvcOutputError(`the cache list printed ${JSON.stringify(line)} before any entry`);
    if (line === PVC_META_VERSION_LINE) block.fields.set("version", "1");
    const space = line.indexOf(" ");
    if (space > 0 && !block.fields.has(line.slice(0, space)))
      block.fields.set(line.slice(0, space), line.slice(space + 1));
  }
  if (blocks.length !== listed)
    throw new PvcOutputError(`the cache list printed ${blocks.length} entries but counted ${listed}`);
  const entries: CacheEntry[] = [];
  for (const { hash, usedAt, fields } of blocks) {
    const key = fields.get("key");
    const bytes = fields.get("bytes");
    const sha256 = fields.get("sha256");
    const createdAt = fields.get("createdAt");
    if (
      fields.get("version") !== "1" ||
      key === undefined ||
      fields.get("repo") !== repo ||
      hashCacheName(key) !== hash
    )
      continue;
    if (
      !bytes ||
      !/^\d+$/.test(bytes) ||
      !sha256 ||
      !/^[0-9a-f]{64}$/.test(sha256) ||
      !createdAt ||
      !/^\d+$/.test(createdAt)
    )
      continue;
    const compression = fields.get("compression");
    if (compression !== "gzip" && compression !== "zstd") continue;
    entries.push({
      repo,
      key,
      bytes: Number(bytes),
      sha256,
      compression,
      createdAt: Number(createdAt),
      lastUsedAt: Math.max(usedAt, Number(createdAt)),
    });
  }
  return entries;
}

export function parsePvcRestore(output: PvcCommandOutput): PvcRestoreOutcome {
  const { word, rest } = readResult(output, "restore");
  switch (word) {
    case "restored":
      return { kind: "restored", bytes: readCount(rest, "the restored bytes") };
    case "missing":
      return { kind: "missing" };
    case "no-decoder":
      return { kind: "no-decoder", compression: rest };
    case "corrupt":
      return { kind: "corrupt", reason: rest };
    case "failed":
      return { kind: "failed", reason: rest };
    default:
      return unexpected("restore", word);
  }
}

export function parsePvcSave(output: PvcCommandOutput): PvcSaveOutcome {
  const { word, rest } = readResult(output, "save");
  const [first, second] = rest.split(" ");
  switch (word) {
    case "saved":
      if (!second || !/^[0-9a-f]{64}$/.test(second))
        throw new PvcOutputError(`the cache save printed ${JSON.stringify(rest)} where the bytes and sha256 belong`);
      return { kind: "saved", bytes: readCount(first, "the saved bytes"), sha256: second };
    case "exists":
      return { kind: "exists" };
    case "empty":
      return { kind: "empty" };
    case "too-large":
      return {
        kind: "too-large",
        bytes: readCount(first, "the archive's bytes"),
        maxBytes: readCount(second, "the byte budget"),
      };
    case "failed":
      return { kind: "failed", reason: rest };
    default:
      return unexpected("save", word);
  }
}

/** Whether the entry was there to be marked used. */
export function parsePvcTouch(output: PvcCommandOutput): "touched" | "missing" {
  const { word } = readResult(output, "touch");
  if (word !== "touched" && word !== "missing") unexpected("touch", word);
  return word;
}

export function parsePvcEvict(output: PvcCommandOutput): PvcEvictOutcome {
  const { word, rest } = readResult(output, "evict");
  if (word === "failed") throw new PvcOutputError(`the cache evict command failed: ${rest}`);
  if (word !== "evicted") unexpected("evict", word);
  const [evicted, freed, kept] = rest.split(" ");
  return {
    evicted: readCount(evicted, "the evicted entries"),
    freedBytes: readCount(freed, "the freed bytes"),
    keptBytes: readCount(kept, "the kept bytes"),
  };
}
