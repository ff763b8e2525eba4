// The run's cache steps: restore each cache before the first step, save each after a successful run; failures are warnings.
import { CancelledError, describeError } from "../core/errors.js";
import type { RunEventInput } from "../events/run-events.js";
import type { CacheDriver } from "./cache-driver.js";
import type { CacheReport, CacheSpec } from "../workflow/cache-types.js";

type Emit = (event: RunEventInput) => void;

/** A save that did not happen, until the run decides otherwise. */
const NOT_REACHED: CacheReport["save"] = {
  status: "skipped",
  bytes: 0,
  ms: 0,
  reason: "the run ended before its steps did",
};

/** Why caches cannot be restored or saved at all, when settings have caches and the run was given no driver. */
const NO_DRIVER = "no cache store was configured for this run";

/**
 * Restores every cache in order, after copyIn and before the first step; one report per spec, its save not done
 * yet. A failure (store unreadable, entry corrupt, stream cut, no driver) is a warning event and a "failed" restore,
 * never an error; only CancelledError passes through.
 */
export async function restoreCaches(
  driver: CacheDriver | undefined,
  specs: readonly CacheSpec[],
  emit: Emit,
): Promise<CacheReport[]> {
  const reports: CacheReport[] = [];
  for (const spec of specs) {
    const started = Date.now();
    let restore: CacheReport["restore"];
    try {
      if (!driver) throw new Error(NO_DRIVER);
      const found = await driver.restore(spec);
      const ms = Date.now() - started;
      restore =
        found.kind === "miss"
          ? { status: "miss", bytes: 0, ms }
          : { status: found.kind, restoredKey: found.restoredKey, bytes: found.bytes, ms };
    } catch (error) {
      if (error instanceof CancelledError) throw error;
      restore = { status: "failed", bytes: 0, ms: Date.now() - started, reason: describeError(error) };
    }
    emit({
      kind: "cache-restore",
      key: spec.key,
      status: restore.status,
      ...(restore.restoredKey ? { restoredKey: restore.restoredKey } : {}),
      bytes: restore.bytes,
      durationMs: restore.ms,
      ...(restore.reason ? { reason: restore.reason } : {}),
    });
    reports.push({ key: spec.key, restore, save: NOT_REACHED });
  }
  return reports;
}

/**
 * After a successful run, before copyOut: saves every cache whose exact key was not hit (a miss, a fallback hit, a
 * failed restore), in order. A failure is a warning event and a "failed" save; only CancelledError passes through.
 * `reports` are restoreCaches' for the same specs.
 */
export async function saveCaches(
  driver: CacheDriver | undefined,
  specs: readonly CacheSpec[],
  reports: readonly CacheReport[],
  emit: Emit,
): Promise<CacheReport[]> {
  const saved: CacheReport[] = [];
  for (const [index, spec] of specs.entries()) {
    const report = reports[index] ?? {
      key: spec.key,
      restore: { status: "failed", bytes: 0, ms: 0, reason: NO_DRIVER },
      save: NOT_REACHED,
    };
    const started = Date.now();
    let save: CacheReport["save"];
    if (report.restore.status === "exact")
      save = { status: "skipped", bytes: 0, ms: 0, reason: "exact hit: a saved key is never replaced" };
    else {
      try {
        if (!driver) throw new Error(NO_DRIVER);
        const result = await driver.save(spec);
        const ms = Date.now() - started;
        save =
          result.status === "skipped"
            ? { status: "skipped", bytes: 0, ms, reason: result.reason }
            : { status: result.status, bytes: result.bytes, ms };
      } catch (error) {
        if (error instanceof CancelledError) throw error;
        save = { status: "failed", bytes: 0, ms: Date.now() - started, reason: describeError(error) };
      }
    }
    emit({
      kind: "cache-save",
      key: spec.key,
      status: save.status,
      bytes: save.bytes,
      durationMs: save.ms,
      ...(save.reason ? { reason: save.reason } : {}),
    });
    saved.push({ ...report, save });
  }
  return saved;
}

/** The reports of a run that did not succeed: nothing is saved (a failed run's paths may be half-built), and the log says so once per cache. */
export function skipCacheSaves(reports: readonly CacheReport[], why: string, emit: Emit): CacheReport[] {
  return reports.map((report) => {
    const save: CacheReport["save"] = { status: "skipped", bytes: 0, ms: 0, reason: why };
    emit({ kind: "cache-save", key: report.key, status: "skipped", bytes: 0, durationMs: 0, reason: why });
    return { ...report, save };
  });
}
