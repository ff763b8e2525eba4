// Pure builders for every kubectl argument list the runner produces, each declared against the call it makes
// (cluster/permissions.ts: the permissions it needs, whose call it is).

import type { ClusterTarget } from "../cluster.js";
import { CLUSTER_CALLS, type CallDeclaration } from "../permissions.js";

export type { ClusterTarget } from "../cluster.js";

import { RUN_CONTAINER } from "../../manifests/names.js";

export { RUN_CONTAINER };

/** A bound for calls that talk to the API server only (never for exec, which streams for as long as a step runs). */
export const API_REQUEST_TIMEOUT = "30s";

/** A builder of one kind of kubectl call, carrying its call's declaration (permissions, scope, optional). */
export type KubectlCall<A extends unknown[]> = ((...args: A) => string[]) & CallDeclaration;

/**
 * The one way to declare a kubectl builder: against the call it makes, so a new builder cannot be added without its
 * call's permissions (a test checks every `build*Args` export is listed in KUBECTL_CALLS or ADMIN_KUBECTL_CALLS).
 */
function defineCall<A extends unknown[]>(call: CallDeclaration, build: (...args: A) => string[]): KubectlCall<A> {
  return Object.assign(build, call);
}

function buildGlobalArgs(target: ClusterTarget, pinNamespace = true): string[] {
  const args: string[] = [];
  if (target.kubeconfig) args.push("--kubeconfig", target.kubeconfig);
  if (target.context) args.push("--context", target.context);
  if (pinNamespace && target.namespace !== undefined) args.push("--namespace", target.namespace);
  return args;
}

/**
 * `create -f -`: the Job manifest (JSON) arrives on stdin; prints the created Job as JSON, whose namespace the
 * runner pins on later calls. Without --namespace when the namespace is the context's: kubectl picks it.
 */
export const buildCreateArgs = defineCall(CLUSTER_CALLS.createJob, (target: ClusterTarget): string[] => {
  return [
    ...buildGlobalArgs(target, !target.namespaceFromContext),
    "create",
    "--request-timeout",
    API_REQUEST_TIMEOUT,
    "-f",
    "-",
    "-o",
    "json",
  ];
});

/** Reads one Job as JSON (used to confirm a Job after an ambiguous create). */
export const buildGetJobArgs = defineCall(CLUSTER_CALLS.getJob, (target: ClusterTarget, jobName: string): string[] => {
  return [...buildGlobalArgs(target), "get", "job", jobName, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
});

/** Lists the run's pods as JSON (a PodList), by the run-id label set on the pod template. The API transport watches them instead (Cluster.watchPods): the Role grants both. */
export const buildGetPodsArgs = defineCall(
  CLUSTER_CALLS.listPods,
  (target: ClusterTarget, labelSelector: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "pods",
      "--selector",
      labelSelector,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/** Lists the events of one object (an EventList as JSON), to explain why a pod is still Pending. The API transport watches them instead (Cluster.watchEvents): the Role grants both. */
export const buildGetEventsArgs = defineCall(
  CLUSTER_CALLS.listEvents,
  (target: ClusterTarget, kind: "Pod" | "Job", name: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "events",
      "--field-selector",
      `involvedObject.kind=${kind},involvedObject.name=${name}`,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/** The end of one container's log (`logs --tail --limit-bytes`): a service's last lines. */
export const buildLogsArgs = defineCall(
  CLUSTER_CALLS.readLogs,
  (target: ClusterTarget, pod: string, container: string, tailLines: number, limitBytes: number): string[] => {
    return [
      ...buildGlobalArgs(target),
      "logs",
      pod,
      "-c",
      container,
      "--tail",
      String(tailLines),
      "--limit-bytes",
      String(limitBytes),
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/** `exec` into the run container; `stdin` adds -i so the command reads what the runner pipes in. */
export const buildExecArgs = defineCall(
  CLUSTER_CALLS.exec,
  (
    target: ClusterTarget,
    pod: string,
    command: readonly string[],
    stdin: boolean,
    container: string = RUN_CONTAINER,
  ): string[] => {
    return [...buildGlobalArgs(target), "exec", ...(stdin ? ["-i"] : []), pod, "-c", container, "--", ...command];
  },
);

/** Deletes the Job and (background propagation) its pods; already-gone is not an error; does not block. */
export const buildDeleteJobArgs = defineCall(
  CLUSTER_CALLS.deleteJob,
  (target: ClusterTarget, jobName: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      "job",
      jobName,
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/** `create -f -` of the run's PodDisruptionBudget (JSON on stdin), once the Job exists; prints its name only. */
export const buildCreateBudgetArgs = defineCall(CLUSTER_CALLS.createBudget, (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target), "create", "--request-timeout", API_REQUEST_TIMEOUT, "-f", "-", "-o", "name"];
});

/** Lists our PodDisruptionBudgets by label as JSON: gc removes those whose Job is gone. */
export const buildListBudgetsArgs = defineCall(
  CLUSTER_CALLS.listBudgets,
  (target: ClusterTarget, labelSelector: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "poddisruptionbudgets.policy",
      "--selector",
      labelSelector,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/** Deletes one PodDisruptionBudget (teardown, gc); already gone is not an error. */
export const buildDeleteBudgetArgs = defineCall(
  CLUSTER_CALLS.deleteBudget,
  (target: ClusterTarget, name: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      "poddisruptionbudget.policy",
      name,
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/** Lists the runner's Jobs by label as JSON (a JobList): orphans, and the warm placeholders a run may claim. */
export const buildListJobsArgs = defineCall(
  CLUSTER_CALLS.listJobs,
  (target: ClusterTarget, labelSelector: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "jobs",
      "--selector",
      labelSelector,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/**
 * Deletes one placeholder only if it is still the object the caller listed: `delete --raw` sends the DeleteOptions
 * on stdin (`buildClaimBody`: background propagation, preconditions on uid and resourceVersion). The delete is the
 * claim: of two runs that saw the same placeholder, one succeeds, the other gets NotFound or Conflict.
 */
export const buildClaimPlaceholderArgs = defineCall(
  CLUSTER_CALLS.claimPlaceholder,
  (target: ClusterTarget, namespace: string, name: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      "--raw",
      `/apis/batch/v1/namespaces/${namespace}/jobs/${name}`,
      "-f",
      "-",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/** The DeleteOptions of a claim (JSON, for `buildClaimPlaceholderArgs`' stdin): only this uid at this resourceVersion goes. */
export function buildClaimBody(uid: string, resourceVersion: string): string {
  return JSON.stringify({
    kind: "DeleteOptions",
    apiVersion: "v1",
    propagationPolicy: "Background",
    preconditions: { uid, resourceVersion },
  });
}

/** Deletes every Job matching the selector (the placeholders, for `warm --release`) and their pods; none is fine. */
export const buildDeleteJobsBySelectorArgs = defineCall(
  CLUSTER_CALLS.deleteJobsBySelector,
  (target: ClusterTarget, labelSelector: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      "jobs",
      "--selector",
      labelSelector,
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/**
 * Sets annotations on a Job with a JSON merge patch (one PATCH request, no read first): the run's heartbeat, a
 * cancel request from another process, the mark of a kept Job. A Job that is gone fails with NotFound.
 */
export const buildAnnotateJobArgs = defineCall(
  CLUSTER_CALLS.annotateJob,
  (target: ClusterTarget, jobName: string, annotations: Readonly<Record<string, string>>): string[] => {
    const patch = JSON.stringify({ metadata: { annotations } });
    return [
      ...buildGlobalArgs(target),
      "patch",
      "job",
      jobName,
      "--type",
      "merge",
      "-p",
      patch,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "name",
    ];
  },
);

/**
 * How long one watch of the run's Job lasts before kubectl ends it cleanly (exit 0) and the runner starts another: a
 * connection that died silently is replaced at the latest then, and a watch left by a runner killed with SIGKILL
 * ends by itself.
 */
export const WATCH_REQUEST_TIMEOUT = "5m";

/**
 * Watches one Job: kubectl GETs it, then streams one `{"type": ..., "object": Job}` JSON document per change (the
 * first one is the Job as it is now), until WATCH_REQUEST_TIMEOUT.
 */
export const buildWatchJobArgs = defineCall(
  CLUSTER_CALLS.watchJob,
  (target: ClusterTarget, jobName: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "job",
      jobName,
      "--watch",
      "--output-watch-events",
      "-o",
      "json",
      "--request-timeout",
      WATCH_REQUEST_TIMEOUT,
    ];
  },
);

/** kubectl's own version, as JSON (`clientVersion`); talks to no server. */
export const buildClientVersionArgs = defineCall(CLUSTER_CALLS.clientVersion, (): string[] => [
  "version",
  "--client",
  "-o",
  "json",
]);

/** kubectl's and the API server's versions, as JSON; the server part fails when it cannot be reached. */
export const buildServerVersionArgs = defineCall(
  CLUSTER_CALLS.serverVersion,
  (target: ClusterTarget, requestTimeout: string): string[] => {
    return [...buildGlobalArgs(target, false), "version", "-o", "json", "--request-timeout", requestTimeout];
  },
);

/**
 * The kubeconfig as kubectl resolves it for the chosen context, secrets included (`--raw`), as JSON: for the
 * context's namespace and what kind of credential it holds. What it prints must never be logged or printed.
 */
export const buildViewConfigArgs = defineCall(CLUSTER_CALLS.viewConfig, (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target, false), "config", "view", "--raw", "--minify", "-o", "json"];
});

/**
 * Creates the review objects on stdin (SelfSubjectAccessReview, SelfSubjectReview; a List of them) and prints
 * the answers as JSON. Through a manifest rather than `auth can-i`/`auth whoami`, whose bodies kubectl 1.33 sends
 * as protobuf; without client-side validation, which would fetch an OpenAPI document for nothing.
 */
export const buildCreateReviewsArgs = defineCall(
  CLUSTER_CALLS.createReviews,
  (target: ClusterTarget, requestTimeout: string): string[] => {
    return [
      ...buildGlobalArgs(target, false),
      "create",
      "--validate=false",
      "-f",
      "-",
      "-o",
      "json",
      "--request-timeout",
      requestTimeout,
    ];
  },
);

/** Reads one namespace (cluster-scoped: a scoped credential may not). */
export const buildGetNamespaceArgs = defineCall(
  CLUSTER_CALLS.getNamespace,
  (target: ClusterTarget, namespace: string, requestTimeout: string): string[] => {
    return [
      ...buildGlobalArgs(target, false),
      "get",
      "namespace",
      namespace,
      "-o",
      "json",
      "--request-timeout",
      requestTimeout,
    ];
  },
);

/**
 * A server-side dry run of creating the Job manifest on stdin: nothing is stored, but the namespace must exist and
 * admission must accept it. Where namespaces cannot be read, this tells whether the namespace is there.
 */
export const buildDryRunCreateArgs = defineCall(
  CLUSTER_CALLS.dryRunCreate,
  (target: ClusterTarget, requestTimeout: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "create",
      "--dry-run=server",
      "-f",
      "-",
      "-o",
      "json",
      "--request-timeout",
      requestTimeout,
    ];
  },
);

/** Lists the nodes (cluster-scoped: a scoped credential may not). */
export const buildGetNodesArgs = defineCall(
  CLUSTER_CALLS.getNodes,
  (target: ClusterTarget, requestTimeout: string): string[] => {
    return [...buildGlobalArgs(target, false), "get", "nodes", "-o", "json", "--request-timeout", requestTimeout];
  },
);

/**
 * Reads the PVC cache backend's claim (doctor, with `--cache-pvc`). A run never reads it (the pod mounts it), so a
 * credential need not be allowed to: optional, and not part of the Role.
 */
export const buildGetClaimArgs = defineCall(
  CLUSTER_CALLS.getClaim,
  (target: ClusterTarget, claim: string, requestTimeout: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      "persistentvolumeclaims",
      claim,
      "-o",
      "json",
      "--request-timeout",
      requestTimeout,
    ];
  },
);

/**
 * `config view` of the admin kubeconfig, one context, credentials and CA inlined: where `credentials` reads the server
 * and CA of the kubeconfig it writes (kubectl applies its own merge rules, --kubeconfig and --context). Local: no
 * request reaches the API server. Its output holds the admin's credentials: it is parsed, never printed.
 */
export const buildConfigViewArgs = defineCall(CLUSTER_CALLS.viewAdminConfig, (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target, false), "config", "view", "--raw", "--minify", "--flatten", "-o", "json"];
});

/** `apply -f -` of the credential's ServiceAccount, Role and RoleBinding (YAML documents on stdin): creates, corrects or leaves each one, and says which. */
export const buildApplyCredentialArgs = defineCall(CLUSTER_CALLS.applyCredential, (target: ClusterTarget): string[] => [
  ...buildGlobalArgs(target),
  "apply",
  "--request-timeout",
  API_REQUEST_TIMEOUT,
  "-f",
  "-",
]);

/**
 * Posts a TokenRequest (JSON on stdin) for the ServiceAccount and prints the answer, whose status holds the token: the
 * same JSON on every kubectl (1.33's `create token` would send protobuf), and the token never in argv.
 */
export const buildTokenRequestArgs = defineCall(
  CLUSTER_CALLS.requestToken,
  (target: ClusterTarget, namespace: string, serviceAccount: string): string[] => {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccount)}/token`;
    return [
      ...buildGlobalArgs(target, false),
      "create",
      "--raw",
      path,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-f",
      "-",
    ];
  },
);

/** Deletes the RoleBinding, the Role and the ServiceAccount (its tokens die with it); already gone is not an error. */
export const buildDeleteCredentialArgs = defineCall(
  CLUSTER_CALLS.deleteCredential,
  (target: ClusterTarget, name: string): string[] => [
    ...buildGlobalArgs(target),
    "delete",
    `rolebinding.rbac.authorization.k8s.io/${name}`,
    `role.rbac.authorization.k8s.io/${name}`,
    `serviceaccount/${name}`,
    "--ignore-not-found",
    "--wait=false",
    "--request-timeout",
    API_REQUEST_TIMEOUT,
  ],
);

/** The Lease resource, fully named: no other group's `leases` can be meant. */
const LEASES = "leases.coordination.k8s.io";

/** Reads one Lease (an instance's, serve) as JSON. */
export const buildGetLeaseArgs = defineCall(CLUSTER_CALLS.getLease, (target: ClusterTarget, name: string): string[] => {
  return [...buildGlobalArgs(target), "get", LEASES, name, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
});

/** Lists the Leases matching a label selector as JSON (the instances', for an adopter, list and gc). */
export const buildListLeasesArgs = defineCall(
  CLUSTER_CALLS.listLeases,
  (target: ClusterTarget, labelSelector: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "get",
      LEASES,
      "--selector",
      labelSelector,
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/** `create -f -` of a Lease (JSON on stdin); prints it as stored. */
export const buildCreateLeaseArgs = defineCall(CLUSTER_CALLS.createLease, (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target), "create", "--request-timeout", API_REQUEST_TIMEOUT, "-f", "-", "-o", "json"];
});

/**
 * `replace -f -` of a Lease (JSON on stdin) carrying the resourceVersion it was read at: a PUT the API server refuses
 * with 409 Conflict when the Lease changed since, so a renewal never overwrites another holder's.
 */
export const buildUpdateLeaseArgs = defineCall(CLUSTER_CALLS.updateLease, (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target), "replace", "--request-timeout", API_REQUEST_TIMEOUT, "-f", "-", "-o", "json"];
});

/** Deletes one Lease; already gone is not an error. */
export const buildDeleteLeaseArgs = defineCall(
  CLUSTER_CALLS.deleteLease,
  (target: ClusterTarget, name: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      LEASES,
      name,
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/**
 * Deletes one Lease only if it is still at the resourceVersion read: `delete --raw` with DeleteOptions on stdin
 * (`buildDeleteLeaseBody`), answered 409 Conflict when it was renewed since, 404 when it is gone.
 */
export const buildDeleteLeaseAtVersionArgs = defineCall(
  CLUSTER_CALLS.deleteLease,
  (target: ClusterTarget, namespace: string, name: string): string[] => {
    return [
      ...buildGlobalArgs(target),
      "delete",
      "--raw",
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
      "-f",
      "-",
      "--request-timeout",
      API_REQUEST_TIMEOUT,
    ];
  },
);

/** The DeleteOptions of a Lease's delete at a version (JSON, for `buildDeleteLeaseAtVersionArgs`' stdin). */
export function buildDeleteLeaseBody(resourceVersion: string): string {
  return JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", preconditions: { resourceVersion } });
}

/**
 * The claim of a run by an adopter: a JSON merge patch of the Job's annotations that carries metadata.resourceVersion,
 * which the API server takes as a precondition (409 Conflict when the Job changed since it was read). Prints the Job.
 */
export const buildClaimJobArgs = defineCall(
  CLUSTER_CALLS.claimJob,
  (
    target: ClusterTarget,
    jobName: string,
    resourceVersion: string,
    annotations: Readonly<Record<string, string>>,
  ): string[] => {
    return [
      ...buildGlobalArgs(target),
      "patch",
      "job",
      jobName,
      "--type",
      "merge",
      "-p",
      buildClaimPatch(resourceVersion, annotations),
      "--request-timeout",
      API_REQUEST_TIMEOUT,
      "-o",
      "json",
    ];
  },
);

/** The claim's merge patch (both transports send it): the annotations, and the version the Job must still be at. */
export function buildClaimPatch(resourceVersion: string, annotations: Readonly<Record<string, string>>): string {
  return JSON.stringify({ metadata: { resourceVersion, annotations } });
}

/** The admin's calls (`credentials`): declared with their permissions for the record, never part of the runner's Role. */
export const ADMIN_KUBECTL_CALLS: readonly CallDeclaration[] = [
  buildConfigViewArgs,
  buildApplyCredentialArgs,
  buildTokenRequestArgs,
  buildDeleteCredentialArgs,
];

/** Every kubectl call the runner makes, by builder; the scoped credential's Role is the union of their permissions. */
export const KUBECTL_CALLS: readonly CallDeclaration[] = [
  buildCreateArgs,
  buildGetJobArgs,
  buildGetPodsArgs,
  buildGetEventsArgs,
  buildLogsArgs,
  buildExecArgs,
  buildDeleteJobArgs,
  buildListJobsArgs,
  buildAnnotateJobArgs,
  buildWatchJobArgs,
  buildClientVersionArgs,
  buildServerVersionArgs,
  buildViewConfigArgs,
  buildCreateReviewsArgs,
  buildGetNamespaceArgs,
  buildDryRunCreateArgs,
  buildGetNodesArgs,
  buildGetClaimArgs,
  buildClaimPlaceholderArgs,
  buildDeleteJobsBySelectorArgs,
  buildCreateBudgetArgs,
  buildListBudgetsArgs,
  buildDeleteBudgetArgs,
  buildGetLeaseArgs,
  buildListLeasesArgs,
  buildCreateLeaseArgs,
  buildUpdateLeaseArgs,
  buildClaimJobArgs,
  buildDeleteLeaseArgs,
  buildDeleteLeaseAtVersionArgs,
];
