// Decides which pending runs start now: submission order, at most --max-runs at once and --max-runs-per-repo of one repository.
export interface QueuedRun {
  readonly runId: string;
  /** The trigger's repository; runs without one share the limit of the empty repository. */
  readonly repo: string | null;
}

export interface SchedulerLimits {
  readonly maxRuns: number;
  /** Absent: a repository may take every slot. */
  readonly maxRunsPerRepo?: number;
}

/**
 * The pending runs to start, in the order to start them. Pure. Walks the queue in submission order, skipping a run
 * whose repository is at its limit (a later run of another repository goes first, so one busy repository cannot
 * starve the others), until every slot is taken.
 */
export function pickRunsToStart(
  pending: readonly QueuedRun[],
  running: readonly QueuedRun[],
  limits: SchedulerLimits,
): QueuedRun[] {
  const perRepo = new Map<string, number>();
  for (const run of running) perRepo.set(run.repo ?? "", (perRepo.get(run.repo ?? "") ?? 0) + 1);
  let free = limits.maxRuns - running.length;
  const picked: QueuedRun[] = [];
  for (const run of pending) {
    if (free <= 0) break;
    const repo = run.repo ?? "";
    const busy = perRepo.get(repo) ?? 0;
    if (limits.maxRunsPerRepo !== undefined && busy >= limits.maxRunsPerRepo) continue;
    perRepo.set(repo, busy + 1);
    picked.push(run);
    free -= 1;
  }
  return picked;
}
