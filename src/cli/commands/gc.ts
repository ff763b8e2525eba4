// `gc`: deletes our Jobs whose run is over or abandoned, and expired warm placeholders; prints what it removed and spared, and why.
import { formatDuration, readDuration } from "../../core/duration.js";
import { DEFAULT_TIMINGS } from "../../executor/kubernetes/context.js";
import { InputError } from "../../core/errors.js";
import { CLUSTER_OPTIONS, type RawClusterOptions } from "../cluster-options.js";
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";
import { readHeartbeatInterval } from "../heartbeat-interval.js";
import { runOperatorCommand } from "../operator-command.js";
import { formatGcReport, runGc } from "../../ops/gc.js";

/** A heartbeat older than this means the run's runner is gone (four missed refreshes at the default interval). */
export const DEFAULT_STALE_AFTER_MS = 120_000;

interface RawGcOptions extends RawClusterOptions {
  staleAfter: string;
  olderThan?: string;
  dryRun?: boolean;
}

/**
 * The gc policy from the options: durations checked, and --stale-after at least twice the heartbeat's interval (a
 * live run's heartbeat may be one interval old plus a slow refresh).
 */
export function resolveGcPolicy(
  raw: RawGcOptions,
  env: NodeJS.ProcessEnv,
): { staleAfterMs: number; olderThanMs?: number } {
  const staleAfterMs = readDuration(raw.staleAfter, "--stale-after");
  const interval = readHeartbeatInterval(env);
  if (staleAfterMs < 2 * interval) {
    throw new InputError(
      `--stale-after must be at least twice the heartbeat interval (${formatDuration(2 * interval)}), or live runs would be taken for abandoned; got "${raw.staleAfter}"`,
    );
  }
  return {
    staleAfterMs,
    ...(raw.olderThan === undefined ? {} : { olderThanMs: readDuration(raw.olderThan, "--older-than") }),
  };
}

export const gcCommand: CommandSpec<RawGcOptions> = {
  name: "gc",
  summary:
    "delete Jobs whose run is over or abandoned (stale heartbeat) and expired warm placeholders; never a live run",
  options: [
    ...CLUSTER_OPTIONS,
    {
      flag: "--stale-after <duration>",
      description: "a run whose heartbeat is older is abandoned (at least twice the heartbeat interval)",
      defaultValue: "2m",
    },
    { flag: "--older-than <duration>", description: "only remove Jobs older than this" },
    { flag: "--dry-run", description: "say what would be removed; remove nothing" },
  ],
  execute: ({ options, ...io }) =>
    runOperatorCommand(
      options,
      io,
      async ({ cluster, target }, policy) => {
        const report = await runGc(cluster, target, {
          policy,
          dryRun: options.dryRun ?? false,
          deleteRetry: DEFAULT_TIMINGS.deleteRetry,
        });
        io.stdout.write(formatGcReport(report));
        return report.outcomes.some((o) => o.result === "failed") ? EXIT.infrastructure : EXIT.success;
      },
      () => resolveGcPolicy(options, io.env), // bad input: before the cluster is opened
    ),
};
