// The operator commands' reads of the cluster (our Jobs, their pods, one Job) and what a failed call means for them.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPod } from "kubernetes-models/v1/Pod";
import { InfraError, InputError } from "../errors.js";
import { buildGetJobArgs, buildGetPodsArgs, buildListJobsArgs, type ClusterTarget } from "../cluster/kubectl/kubectl-args.js";
import { classifyKubectlFailure, findPermissionError, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import type { Kubectl, KubectlOutput } from "../cluster/kubectl/kubectl.js";
import { MANAGED_SELECTOR } from "../k8s/labels.js";

/** The error a failed call of an operator command is: bad input for a kubeconfig kubectl refuses, else the infrastructure's. */
export function describeCallFailure(what: string, result: Pick<KubectlOutput, "stderr" | "exitCode">): InputError | InfraError {
  const said = summarizeStderr(result.stderr);
  // A 403 or a 401: the same typed error, with the same advice, as the runner's own refused calls.
  const refused = findPermissionError(result.stderr, what);
  if (refused) return refused;
  switch (classifyKubectlFailure(result.stderr)) {
    case "kubeconfig":
      return new InputError(`kubectl cannot use the kubeconfig: ${said}`);
    case "unreachable":
      return new InfraError("cluster-unreachable", `${what}: the cluster cannot be reached: ${said}`);
    default:
      return new InfraError("api-error", `${what} failed (kubectl exit ${result.exitCode}): ${said}`);
  }
}

function parseJson<T>(what: string, stdout: string): T {
  try {
    return JSON.parse(stdout) as T;
  } catch {
    throw new InfraError("api-error", `${what}: kubectl printed no JSON: ${stdout.slice(0, 200)}`);
  }
}

/** Every Job of ours in the target's namespace (runs and placeholders), by our managed-by label. */
export async function listOurJobs(kubectl: Kubectl, target: ClusterTarget): Promise<IJob[]> {
  const result = await kubectl.run(buildListJobsArgs(target, MANAGED_SELECTOR));
  if (result.exitCode !== 0) throw describeCallFailure("listing the Jobs", result);
  return parseJson<{ items?: IJob[] }>("listing the Jobs", result.stdout).items ?? [];
}

/** Every pod of ours in the target's namespace (the template carries the same label). */
export async function listOurPods(kubectl: Kubectl, target: ClusterTarget): Promise<IPod[]> {
  const result = await kubectl.run(buildGetPodsArgs(target, MANAGED_SELECTOR));
  if (result.exitCode !== 0) throw describeCallFailure("listing the pods", result);
  return parseJson<{ items?: IPod[] }>("listing the pods", result.stdout).items ?? [];
}

/** One Job by name, or undefined when there is none. */
export async function readJob(kubectl: Kubectl, target: ClusterTarget, name: string): Promise<IJob | undefined> {
  const result = await kubectl.run(buildGetJobArgs(target, name));
  if (result.exitCode !== 0) {
    if (classifyKubectlFailure(result.stderr) === "not-found") return undefined;
    throw describeCallFailure(`reading Job ${name}`, result);
  }
  return parseJson<IJob>(`reading Job ${name}`, result.stdout);
}

/** The name of the Job that owns a pod: its Job ownerReference, else the job-name labels the Job controller sets. */
export function readPodJobName(pod: IPod): string | undefined {
  const owner = pod.metadata?.ownerReferences?.find((ref) => ref.kind === "Job");
  return owner?.name ?? pod.metadata?.labels?.["batch.kubernetes.io/job-name"] ?? pod.metadata?.labels?.["job-name"];
}

/** The namespace kubectl answered for (the items say which, when --namespace was left to the context). */
export function readAnsweredNamespace(target: ClusterTarget, jobs: readonly IJob[]): string | undefined {
  return target.namespace ?? jobs.find((job) => job.metadata?.namespace)?.metadata?.namespace;
}
