// Summary statistics of repeated measurements: median, extremes and spread.

export interface Summary {
  readonly n: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** (max - min) / median, in percent. */
  readonly spreadPct: number;
}

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function computeMedian(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export function summarizeValues(values: readonly number[]): Summary {
  const median = computeMedian(values);
  const min = Math.min(...values);
  const max = Math.max(...values);
  return { n: values.length, median, min, max, spreadPct: median === 0 ? 0 : ((max - min) / median) * 100 };
}

/** "1234 ms (min 1200, max 1300, spread 8.1%, n=5)". */
export function formatSummary(summary: Summary, unit: string, digits = 0): string {
  const f = (v: number) => v.toFixed(digits);
  return `${f(summary.median)} ${unit} (min ${f(summary.min)}, max ${f(summary.max)}, spread ${summary.spreadPct.toFixed(1)}%, n=${summary.n})`;
}
