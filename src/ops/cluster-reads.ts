// The operator commands' reads of the cluster (our Jobs, their pods, one Job) and what a failed call means for them.
import { describePodEnd } from "../manifests/pod-state.js";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { ClusterTarget, OpsCluster } from "../cluster/cluster.js";
import { ClusterError, ConfigError, NotFoundError, UnavailableError } from "../cluster/errors.js";
import { describeRefusal } from "../cluster/refusal.js";
import { InfraError, InputError } from "../core/errors.js";
import { MANAGED_SELECTOR } from "../manifests/labels.js";

/** The error a failed call of an operator command is: bad input for a kubeconfig the transport refuses, else the infrastructure's. */
export function describeOperatorCallFailure(what: string, error: unknown): Error {
  if (!(error instanceof ClusterError)) return error instanceof Error ? error : new Error(String(error));
  // A 403 or a 401: the same typed error, with the same advice, as the runner's own refused calls.
  const refused = describeRefusal(error, what);
  if (refused) return refused;
  if (error instanceof ConfigError) return new InputError(`kubectl cannot use the kubeconfig: ${error.message}`);
  if (error instanceof UnavailableError && error.reason === "unreachable")
    return new InfraError("cluster-unreachable", `${what}: the cluster cannot be reached: ${error.message}`);
  return new InfraError("api-error", `${what} failed: ${error.message}`);
}

/** Every Job of ours in the target's namespace (runs and placeholders), by our managed-by label. */
export async function listOurJobs(cluster: OpsCluster, target: ClusterTarget): Promise<IJob[]> {
  try {
    return await cluster.listJobs(target.namespace, MANAGED_SELECTOR);
  } catch (error) {
    throw describeOperatorCallFailure("listing the Jobs", error);
  }
}

/** Every pod of ours in the target's namespace (the template carries the same label). */
export async function listOurPods(cluster: OpsCluster, target: ClusterTarget): Promise<IPod[]> {
  try {
    return await cluster.listPods(target.namespace, MANAGED_SELECTOR);
  } catch (error) {
    throw describeOperatorCallFailure("listing the pods", error);
  }
}

/** One Job by name, or undefined when there is none. */
export async function readJob(cluster: OpsCluster, target: ClusterTarget, name: string): Promise<IJob | undefined> {
  try {
    return await cluster.getJob(target.namespace, name);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw describeOperatorCallFailure(`reading Job ${name}`, error);
  }
}

/** The name of the Job that owns a pod: its Job ownerReference, else the job-name labels the Job controller sets. */
export function readPodJobName(pod: IPod): string | undefined {
  const owner = pod.metadata?.ownerReferences?.find((ref) => ref.kind === "Job");
  return owner?.name ?? pod.metadata?.labels?.["batch.kubernetes.io/job-name"] ?? pod.metadata?.labels?.["job-name"];
}

/** Each Job's pod by the Job's name: its newest (a run has one). */
export function indexPodsByJob(pods: readonly IPod[]): Map<string, IPod> {
  const podOf = new Map<string, IPod>();
  for (const pod of pods) {
    const name = readPodJobName(pod);
    if (name === undefined) continue;
    const known = podOf.get(name);
    if (!known || String(pod.metadata?.creationTimestamp ?? "") > String(known.metadata?.creationTimestamp ?? ""))
      podOf.set(name, pod);
  }
  return podOf;
}

/** Why a Job's pod ended, once its run container has: `list` and `gc` show it (an idle stop in the runner's words). */
export function readPodEnd(pod: IPod | undefined): { readonly reason: string; readonly message: string } | undefined {
  const phase = pod?.status?.phase;
  const ended =
    phase === "Failed" || phase === "Succeeded" || pod?.status?.containerStatuses?.[0]?.state?.terminated !== undefined;
  if (!pod || !ended) return undefined;
  const end = describePodEnd(pod);
  return { reason: end.reason, message: end.message ?? `the pod is ${phase ?? "Terminated"}` };
}

/** The namespace the cluster answered for (the items say which, when --namespace was left to the context). */
export function readAnsweredNamespace(target: ClusterTarget, jobs: readonly IJob[]): string | undefined {
  return target.namespace ?? jobs.find((job) => job.metadata?.namespace)?.metadata?.namespace;
}
