// A planned call as the API transport makes it: its requests (a watch is a list then a watch, a delete by selector a
// list then a delete each; none for what it does in its own process), for --dry-run.
import type { ClusterTarget } from "../cluster.js";
import { describePlannedNamespace, type ClusterCallPlan } from "../planned-call.js";
import {
  planApplyCredentialObjects,
  planClaimJob,
  planCreateLease,
  planDeleteLease,
  planGetLease,
  planListLeases,
  planUpdateLease,
  planCreateBudget,
  planCreateJob,
  planDeleteBudget,
  planDeleteCredentialObjects,
  planDeleteJob,
  planExec,
  planListJobs,
  planPatchAnnotations,
  planRequestToken,
  planWatchEvents,
  planWatchJobs,
  planWatchPods,
  type PlannedApiRequest,
} from "./api-request.js";

/** The requests that make `plan` against `target`; the API transport always names the namespace (the context's when not pinned). */
export function describeApiCall(target: ClusterTarget, plan: ClusterCallPlan): PlannedApiRequest[] {
  const ns = describePlannedNamespace(target);
  switch (plan.call) {
    case "listJobs":
      return [planListJobs(ns, plan.selector)];
    case "claimPlaceholder":
      return [planDeleteJob(ns, plan.name, plan.preconditions)];
    case "createJob":
      return [planCreateJob(ns, plan.body)];
    case "createBudget":
      return [planCreateBudget(ns)];
    case "watchJob":
      return planWatchJobs(ns);
    case "annotateJob":
      return [planPatchAnnotations(ns, plan.job, Object.keys(plan.annotations))];
    case "watchPods":
      return planWatchPods(ns);
    case "watchEvents":
      return planWatchEvents(ns, plan.kind);
    case "exec":
      return [planExec(ns, plan.pod, plan.command, plan.stdin)];
    case "deleteJob":
      return [planDeleteJob(ns, plan.job)];
    case "deleteBudget":
      return [planDeleteBudget(ns, plan.name)];
    case "deleteJobsBySelector":
      return [planListJobs(ns, plan.selector), planDeleteJob(ns, plan.each)];
    case "getLease":
      return [planGetLease(ns, plan.name)];
    case "listLeases":
      return [planListLeases(ns, plan.selector)];
    case "createLease":
      return [planCreateLease(ns)];
    case "updateLease":
      return [planUpdateLease(ns, plan.name)];
    case "deleteLease":
      return [planDeleteLease(ns, plan.name, plan.resourceVersion)];
    case "claimJob":
      return [planClaimJob(ns, plan.job, plan.resourceVersion, Object.keys(plan.annotations))];
    case "viewAdminConfig":
      return [];
    case "applyCredential":
      return planApplyCredentialObjects(plan.namespace, plan.name);
    case "requestToken":
      return [planRequestToken(plan.namespace, plan.serviceAccount)];
    case "deleteCredential":
      return planDeleteCredentialObjects(plan.namespace, plan.name);
  }
}
