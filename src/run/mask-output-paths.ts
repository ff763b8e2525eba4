// The result's outputs and refused outputs with every secret in their paths masked: a step may name a file after one.
import type { SecretMasker } from "../secrets/mask-stream.js";
import type { ReadonlyList } from "../core/readonly-list.js";
import type { RunResult } from "./run-result.js";

type OutputEntry = RunResult["outputs"] extends ReadonlyList<infer T> ? T : never;
type RefusedEntry = RunResult["refusedOutputs"][number];

/** A view of `list` whose items have their paths masked, built on demand like the compact list it wraps. */
class MaskedOutputList implements ReadonlyList<OutputEntry> {
  constructor(
    private readonly list: ReadonlyList<OutputEntry>,
    private readonly masker: SecretMasker,
  ) {}

  get length(): number {
    return this.list.length;
  }

  at(index: number): OutputEntry | undefined {
    const item = this.list.at(index);
    return item === undefined ? undefined : { ...item, path: this.masker.maskText(item.path) };
  }

  *[Symbol.iterator](): Iterator<OutputEntry> {
    for (let index = 0; index < this.list.length; index += 1) yield this.at(index)!;
  }

  toJSON(): OutputEntry[] {
    return [...this];
  }
}

/**
 * The outputs as the result lists them: with no secret the list itself; else a view whose paths (and the refused
 * entries' paths and reasons) have every secret form replaced with `***`. The files under --out keep their names:
 * they are the step's own outputs.
 */
export function maskOutputPaths(
  outputs: ReadonlyList<OutputEntry>,
  refused: readonly RefusedEntry[],
  masker: SecretMasker,
): { outputs: ReadonlyList<OutputEntry>; refusedOutputs: readonly RefusedEntry[] } {
  if (masker.isEmpty) return { outputs, refusedOutputs: refused };
  return {
    outputs: new MaskedOutputList(outputs, masker),
    refusedOutputs: refused.map((entry) => ({
      ...entry,
      path: masker.maskText(entry.path),
      reason: masker.maskText(entry.reason),
    })),
  };
}
