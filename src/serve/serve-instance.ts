// One `serve` among several in a namespace: its Lease held while it runs, its own runs re-claimed at start, and (with --adopt) the runs of instances that died taken over.
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import { describeError } from "../core/errors.js";
import { Adopter } from "./adopter.js";
import { claimRun } from "./claim-run.js";
import { deriveRenewIntervalMs, LeaseHolder } from "./lease-holder.js";
import { createRunFence, readJobOwner } from "./run-fence.js";
import type { RunFence } from "../run/run-fence.js";
import type { RunService } from "./run-service.js";
import type { StoredRun } from "./run-store.js";

/** `--instance`, `--lease-duration` and `--adopt`, resolved at the CLI edge. */
export interface InstanceSettings {
  readonly name: string;
  readonly leaseDurationSeconds: number;
  readonly adopt: boolean;
  /** Between an adopter's looks (default the Lease's renew interval, a third of its duration). */
  readonly adoptPollMs?: number;
  /** How long past a Lease's expiry its runs are left to it (default 2 s: clocks differ between hosts). */
  readonly adoptGraceMs?: number;
}

/** How long past a Lease's expiry an adopter waits by default: the hosts' clocks may differ by that much. */
export const DEFAULT_ADOPT_GRACE_MS = 2_000;

/** Takes the instance's Lease; throws InfraError when it cannot (the service does not start without it). */
export async function acquireInstanceLease(
  settings: InstanceSettings,
  cluster: Cluster,
  target: ClusterTarget,
  warn: (message: string) => void,
): Promise<LeaseHolder> {
  const holder = new LeaseHolder({
    cluster,
    namespace: target.namespace,
    instance: settings.name,
    durationSeconds: settings.leaseDurationSeconds,
    warn,
  });
  await holder.acquireOrKeepTrying();
  return holder;
}

/**
 * Before a restart re-attaches to the runs it left running, claims each one again at its Job's resourceVersion
 * (claimRun from itself): a run an adopter took meanwhile is recorded as adopted by it and left alone, and a restart
 * racing an adopter never runs a run both take. A claim that cannot be made (the cluster unreachable) is told, and
 * the re-attach finds what it finds.
 */
export async function reclaimOwnRuns(
  running: readonly StoredRun[],
  instance: string,
  cluster: Cluster,
  service: RunService,
  warn: (message: string) => void,
): Promise<void> {
  await Promise.all(
    running
      .filter((run) => run.plan !== null)
      .map(async (run) => {
        const namespace = (JSON.parse(run.target) as ClusterTarget).namespace;
        try {
          const outcome = await claimRun(cluster, namespace, run.jobName, { instance, from: instance });
          if (outcome.kind === "taken") service.markAdoptedElsewhere(run.runId, outcome.owner);
        } catch (error) {
          warn(`re-claiming run ${run.runId}'s Job ${run.jobName}: ${describeError(error)}`);
        }
      }),
  );
}

/** Starts adopting the runs of instances whose Lease expired (--adopt); stop it before the drain. */
export function startAdopting(
  settings: InstanceSettings,
  cluster: Cluster,
  target: ClusterTarget,
  service: RunService,
  warn: (message: string) => void,
): Adopter {
  const adopter = new Adopter({
    cluster,
    namespace: target.namespace,
    instance: settings.name,
    pollMs: settings.adoptPollMs ?? deriveRenewIntervalMs(settings.leaseDurationSeconds),
    graceMs: settings.adoptGraceMs ?? DEFAULT_ADOPT_GRACE_MS,
    adopt: ({ job, from, continuation }) => {
      const runId = continuation.plan.settings.runId;
      if (service.adoptRun({ continuation, namespace: job.metadata?.namespace, from }))
        warn(`adopted run ${runId} (Job ${job.metadata?.name}) from instance ${from}, whose Lease expired`);
      else
        warn(`claimed run ${runId} from instance ${from} but cannot take it here: a run of that id is known already`);
    },
    warn,
  });
  adopter.start();
  return adopter;
}

/**
 * The fence of each run of this instance (src/serve/run-fence.ts): while its Lease is not held (or lately held again),
 * the run's Job's owner is read (one GET, bounded like a Lease call) before each action that changes the run.
 */
export function fenceRuns(
  instance: string,
  lease: LeaseHolder,
  cluster: Pick<Cluster, "getJob">,
  warn: (message: string) => void,
): (run: { readonly runId: string; readonly jobName: string; readonly namespace: string | undefined }) => RunFence {
  const timeoutMs = Math.max(1000, deriveRenewIntervalMs(lease.durationMs / 1000));
  return (run) =>
    createRunFence({
      runId: run.runId,
      jobName: run.jobName,
      instance,
      lease,
      readOwner: readJobOwner(
        (signal, callTimeoutMs) => cluster.getJob(run.namespace, run.jobName, { signal, timeoutMs: callTimeoutMs }),
        timeoutMs,
      ),
      warn,
    });
}
