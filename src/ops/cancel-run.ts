// `cancel`: asks a run to stop through the cluster (an annotation on its Job that its runner watches), from any host.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { formatDuration } from "../core/duration.js";
import type { ClusterTarget, OpsCluster } from "../cluster/cluster.js";
import { NotFoundError } from "../cluster/errors.js";
import { CANCEL_REQUESTED_ANNOTATION, CANCEL_REQUESTED_BY_ANNOTATION } from "../manifests/labels.js";
import { buildJobName } from "../manifests/names.js";
import { formatProcessIdentity, type ProcessIdentity } from "../manifests/owner.js";
import { isOurJob, readJobFacts } from "./classify-job.js";
import { describeOperatorCallFailure, readJob } from "./cluster-reads.js";

/** What cancel found and did: `requested` is the only outcome that changed anything. Every one exits 0. */
export interface CancelOutcome {
  readonly kind: "requested" | "not-found" | "not-a-run" | "finished" | "deleting";
  /** Sentences for the operator. */
  readonly message: string;
  /** A note that does not change the outcome (a stale heartbeat: the runner may be gone). */
  readonly warning?: string;
}

export interface CancelOptions {
  readonly runId: string;
  readonly requester: ProcessIdentity;
  /** A heartbeat older than this is worth a warning: nobody may be watching for the request. */
  readonly staleAfterMs: number;
  readonly now?: () => Date;
}

/**
 * Reads the run's Job and, when it is one of our runs that is still going, sets `knotless.dev/cancel-requested`
 * (the time) and `knotless.dev/cancel-requested-by` on it; the run's runner watches for them and stops the step,
 * collects the outputs and deletes the Job. No such Job, or one already over, is said and is not an error.
 */
export async function requestRunCancel(
  cluster: OpsCluster,
  target: ClusterTarget,
  options: CancelOptions,
): Promise<CancelOutcome> {
  const jobName = buildJobName(options.runId);
  const now = options.now ?? (() => new Date());
  const where = target.namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${target.namespace}`;
  const job = await readJob(cluster, target, jobName);
  if (!job)
    return {
      kind: "not-found",
      message: `no run ${options.runId} is running in ${where} (no Job ${jobName}); nothing to cancel`,
    };
  const checked = checkCancellable(job, options.runId);
  if (checked) return checked;
  const facts = readJobFacts(job);
  const previous = facts.cancelRequest;
  const annotations = {
    [CANCEL_REQUESTED_ANNOTATION]: now().toISOString(),
    [CANCEL_REQUESTED_BY_ANNOTATION]: formatProcessIdentity(options.requester),
  };
  try {
    await cluster.patchJobAnnotations(target.namespace, jobName, annotations);
  } catch (error) {
    if (error instanceof NotFoundError)
      return {
        kind: "finished",
        message: `run ${options.runId} ended meanwhile (Job ${jobName} is gone); nothing to cancel`,
      };
    throw describeOperatorCallFailure(`requesting the cancel of run ${options.runId}`, error);
  }
  const again = previous
    ? ` (asked before at ${previous.at}${previous.by ? ` by ${formatProcessIdentity(previous.by)}` : ""})`
    : "";
  const runner = facts.owner ? `its runner ${formatProcessIdentity(facts.owner)}` : "its runner";
  const message = `cancel requested for run ${options.runId} (Job ${facts.namespace || "?"}/${jobName})${again}: ${runner} stops the step, collects the outputs and deletes the Job`;
  const beatAge = facts.heartbeat ? now().getTime() - facts.heartbeat.at : undefined;
  const warning =
    beatAge !== undefined && beatAge > options.staleAfterMs
      ? `its heartbeat is ${formatDuration(beatAge)} old: its runner may be gone and never see the request; \`knotless-runner-k8s gc\` removes an abandoned run`
      : undefined;
  return { kind: "requested", message, ...(warning ? { warning } : {}) };
}

/** Why a Job of the run's name is not one to cancel, or undefined when it is. */
function checkCancellable(job: IJob, runId: string): CancelOutcome | undefined {
  const facts = readJobFacts(job);
  if (!isOurJob(job))
    return {
      kind: "not-a-run",
      message: `Job ${facts.name} is not one of this runner's (no app.kubernetes.io/managed-by label): not touched`,
    };
  if (facts.role === "warm")
    return { kind: "not-a-run", message: `Job ${facts.name} is a warm placeholder, not a run: not touched` };
  if (facts.finished)
    return { kind: "finished", message: `run ${runId} is already over (${facts.finished.how}); nothing to cancel` };
  if (facts.deleting) return { kind: "deleting", message: `run ${runId} is already being deleted; nothing to cancel` };
  return undefined;
}
