// Writes result.json without building it as one string: its outputs list can hold 100,000 files.
import { writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import type { RunResult } from "./run-result.js";

/** Output entries serialized per write; a batch is a few tens of KiB. */
const ENTRIES_PER_WRITE = 256;

/**
 * The bytes of `JSON.stringify(result, null, 2) + "\n"`, produced piece by piece: everything but the outputs
 * list is stringified as usual, each output entry on its own, with the indentation JSON.stringify gives an
 * element of a top-level array. At 100,000 outputs the whole string is ~15 MB, and building it next to the
 * list it describes was the runner's peak memory (bench/RESULTS.md); these pieces are small. The outputs
 * are read with `at`, a batch at a time, so a compact list is never turned into objects all at once.
 */
export function* serializeResult(result: RunResult): Generator<string> {
  const { outputs } = result;
  // A placeholder array that JSON.stringify prints as `[]` on one line, then replaced by the entries.
  const head = JSON.stringify({ ...result, outputs: [] }, null, 2);
  if (outputs.length === 0) {
    yield `${head}\n`;
    return;
  }
  const marker = '\n  "outputs": [],\n';
  const at = head.indexOf(marker);
  if (at < 0) throw new Error("result.json: the outputs field is not where the serializer expects it");
  yield `${head.slice(0, at)}\n  "outputs": [\n`;
  for (let start = 0; start < outputs.length; start += ENTRIES_PER_WRITE) {
    const end = Math.min(start + ENTRIES_PER_WRITE, outputs.length);
    const batch: string[] = [];
    for (let index = start; index < end; index += 1)
      batch.push(JSON.stringify(outputs.at(index), null, 2).replace(/^/gm, "    "));
    yield `${batch.join(",\n")}${end === outputs.length ? "\n" : ",\n"}`;
  }
  yield `  ],\n${head.slice(at + marker.length)}\n`;
}

/** Writes result.json at `path` (created or truncated). */
export async function writeResultFile(path: string, result: RunResult): Promise<void> {
  const file = await open(path, "w");
  try {
    for (const piece of serializeResult(result)) await file.write(piece);
  } finally {
    await file.close();
  }
}

/** Writes result.json synchronously, for a runner that is crashing and cannot await (its outputs list is short or empty). */
export function writeResultFileSync(path: string, result: RunResult): void {
  writeFileSync(path, [...serializeResult(result)].join(""));
}
