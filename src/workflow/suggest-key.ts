// Suggests the known name an unknown one was probably meant to be: close in edit distance, or a common alias.

/** Names other CI systems use for ours, suggested when the known name is one of the candidates. */
const ALIASES: Readonly<Record<string, string>> = {
  env: "environment",
  run: "command",
  script: "command",
  deps: "dependencies",
  on: "when",
  resource: "resources",
  files: "paths",
  if: "when",
  condition: "when",
};

/** The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of neighbours each cost 1. */
export function measureEditDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(best);
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate `name` was most likely meant to be, or undefined when none is close: at most one edit for short
 * names, up to a third of the length for longer ones, case ignored; or an alias such as `env` for `environment`.
 */
export function suggestName(name: string, candidates: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const alias = ALIASES[lower];
  if (alias !== undefined && candidates.includes(alias)) return alias;
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = measureEditDistance(lower, candidate.toLowerCase());
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (best === undefined || distance < best.distance))
      best = { candidate, distance };
  }
  return best?.candidate;
}
