// A planned call as the kubectl transport makes it: its command's arguments (after the binary), for --dry-run.
import type { ClusterTarget } from "../cluster.js";
import { describePlannedNamespace, type ClusterCallPlan } from "../planned-call.js";
import {
  buildAnnotateJobArgs,
  buildApplyCredentialArgs,
  buildClaimJobArgs,
  buildClaimPlaceholderArgs,
  buildCreateLeaseArgs,
  buildDeleteLeaseArgs,
  buildDeleteLeaseAtVersionArgs,
  buildGetLeaseArgs,
  buildListLeasesArgs,
  buildUpdateLeaseArgs,
  buildConfigViewArgs,
  buildCreateArgs,
  buildCreateBudgetArgs,
  buildDeleteBudgetArgs,
  buildDeleteCredentialArgs,
  buildDeleteJobArgs,
  buildDeleteJobsBySelectorArgs,
  buildExecArgs,
  buildGetEventsArgs,
  buildGetPodsArgs,
  buildListJobsArgs,
  buildTokenRequestArgs,
  buildWatchJobArgs,
} from "./kubectl-args.js";

/** Before the create, the namespace is the context's when create leaves it to kubectl: so is a lookup's. */
function targetBeforeCreate(target: ClusterTarget): ClusterTarget {
  if (!target.namespaceFromContext) return target;
  const { namespace: _pinnedLater, ...rest } = target;
  return rest;
}

/** The arguments of the kubectl call that makes `plan` against `target`. */
export function describeKubectlCall(target: ClusterTarget, plan: ClusterCallPlan): string[] {
  switch (plan.call) {
    case "listJobs":
      return buildListJobsArgs(plan.beforeCreate ? targetBeforeCreate(target) : target, plan.selector);
    case "claimPlaceholder":
      // The claim's raw path names the namespace, which kubectl reports in the listed placeholder when it is the context's.
      return buildClaimPlaceholderArgs(
        plan.beforeCreate ? targetBeforeCreate(target) : target,
        describePlannedNamespace(target),
        plan.name,
      );
    case "createJob":
      return buildCreateArgs(target);
    case "createBudget":
      return buildCreateBudgetArgs(target);
    case "watchJob":
      return buildWatchJobArgs(target, plan.job);
    case "annotateJob":
      return buildAnnotateJobArgs(target, plan.job, plan.annotations);
    case "watchPods":
      return buildGetPodsArgs(target, plan.selector);
    case "watchEvents":
      return buildGetEventsArgs(target, plan.kind, plan.name);
    case "exec":
      return buildExecArgs(target, plan.pod, plan.command, plan.stdin);
    case "deleteJob":
      return buildDeleteJobArgs(target, plan.job);
    case "deleteBudget":
      return buildDeleteBudgetArgs(target, plan.name);
    case "deleteJobsBySelector":
      return buildDeleteJobsBySelectorArgs(target, plan.selector);
    case "getLease":
      return buildGetLeaseArgs(target, plan.name);
    case "listLeases":
      return buildListLeasesArgs(target, plan.selector);
    case "createLease":
      return buildCreateLeaseArgs(target);
    case "updateLease":
      return buildUpdateLeaseArgs(target);
    case "deleteLease":
      return plan.resourceVersion === undefined
        ? buildDeleteLeaseArgs(target, plan.name)
        : buildDeleteLeaseAtVersionArgs(target, describePlannedNamespace(target), plan.name);
    case "claimJob":
      return buildClaimJobArgs(target, plan.job, plan.resourceVersion, plan.annotations);
    case "viewAdminConfig":
      return buildConfigViewArgs(target);
    case "applyCredential":
      return buildApplyCredentialArgs(target);
    case "requestToken":
      return buildTokenRequestArgs(target, plan.namespace, plan.serviceAccount);
    case "deleteCredential":
      return buildDeleteCredentialArgs(target, plan.name);
  }
}
