// `doctor`: checks, before any run, that kubectl, the cluster, the namespace, the permissions and the credential will do.
import { randomBytes } from "node:crypto";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { formatDuration } from "../../core/duration.js";
import { describeError } from "../../core/errors.js";
import type {
  CallOptions,
  ClusterTarget,
  DoctorCluster,
  ServerVersion,
  TransportFacts,
} from "../../cluster/cluster.js";
import { ClusterError, UnavailableError, type ClusterErrorCode } from "../../cluster/errors.js";
import { collectCallPermissions, type ApiPermission } from "../../cluster/permissions.js";
import { buildJobManifest } from "../../manifests/manifest.js";
import {
  buildAccessReviews,
  buildPermissionQuestions,
  CLUSTER_ADMIN_QUESTION,
  readAccessAnswers,
  readReviewedUser,
  SELF_SUBJECT_REVIEW,
} from "./access-review.js";
import { worseStatus, type DoctorCheck } from "./check.js";
import { parseContextView, type ContextFacts, type Credential } from "./kubeconfig-credential.js";
import { describeSkew, judgeKubectlVersion } from "./kubectl-version.js";

export interface DoctorOptions {
  readonly target: ClusterTarget;
  /** Each API call's own timeout (kubectl's --request-timeout). */
  readonly requestTimeoutMs: number;
  /** Each call is stopped after this long, whatever it waits for. */
  readonly callTimeoutMs: number;
  /** A credential that expires sooner than this is a warning. */
  readonly expiryWarningMs: number;
  readonly now?: () => number;
  /** The PVC cache backend's claim (`--cache-pvc`): checked to exist and be usable; absent, no `cache claim` check. */
  readonly cacheClaim?: string;
}

export const DEFAULT_DOCTOR_OPTIONS = {
  requestTimeoutMs: 5000,
  callTimeoutMs: 8000,
  expiryWarningMs: 24 * 3_600_000,
} as const;

export interface DoctorReport {
  /** The namespace checked: --namespace, else the context's, else default. */
  readonly namespace: string;
  readonly checks: readonly DoctorCheck[];
}

/** How one call of doctor's ended: its answer, or why it gave none. */
type CallResult<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly kind: FailureKind; readonly said: string };

/** What a failed call was: the error's code, `unreachable` for an API server that gave no answer, `missing` for a transport that cannot run. */
type FailureKind = ClusterErrorCode | "unreachable" | "missing";

/** Makes one call bounded by the call timeout; never throws. A call stopped by that bound is a timeout. */
async function call<T>(
  make: (options: CallOptions) => Promise<T>,
  requestTimeoutMs: number,
  timeoutMs: number,
): Promise<CallResult<T>> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs); // not AbortSignal.timeout: its timer does not hold the process
  try {
    return { ok: true, value: await make({ signal: controller.signal, timeoutMs: requestTimeoutMs }) };
  } catch (error) {
    if (controller.signal.aborted)
      return { ok: false, kind: "timeout", said: `no answer within ${formatDuration(timeoutMs)}` };
    if (error instanceof UnavailableError && error.reason === "unreachable")
      return { ok: false, kind: "unreachable", said: error.message };
    if (error instanceof ClusterError) return { ok: false, kind: error.code, said: error.message };
    return { ok: false, kind: "missing", said: describeError(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** A failure that did not reach the API server (refused, unresolvable, silent). */
function isUnreachable(result: CallResult<unknown>): boolean {
  return !result.ok && (result.kind === "unreachable" || result.kind === "timeout");
}

/**
 * Runs every check, the independent ones at once, each call bounded, and reports one line per check. A cluster that
 * cannot be reached fails the cluster check and skips the ones that need it, so a down cluster answers in seconds.
 */
export async function runDoctor(cluster: DoctorCluster, options: DoctorOptions): Promise<DoctorReport> {
  const { target, requestTimeoutMs, callTimeoutMs } = options;
  const now = options.now ?? Date.now;
  const run = <T>(make: (options: CallOptions) => Promise<T>): Promise<CallResult<T>> =>
    call(make, requestTimeoutMs, callTimeoutMs);
  const [client, view] = await Promise.all([
    run((o) => cluster.describeTransport(o)),
    run((o) => cluster.readKubeconfig(o)),
  ]);
  const kubectlCheck = checkKubectl(client);
  if (!client.ok) {
    return {
      namespace: target.namespace ?? "default",
      checks: [kubectlCheck, { name: "cluster", status: "skip", summary: "kubectl cannot run" }],
    };
  }
  const context = view.ok ? parseContextView(view.value) : undefined;
  const namespace = target.namespace ?? context?.namespace ?? "default";
  const permissions = collectCallPermissions();
  const questionsByRule = permissions.map((rule) => buildPermissionQuestions([rule], namespace));
  const questions = questionsByRule.flat();
  const claim = options.cacheClaim;
  const [server, namespaceRead, reviews, whoami, nodes, claimRead] = await Promise.all([
    run((o) => cluster.getServerVersion(o)),
    run((o) => cluster.getNamespace(namespace, o)),
    run((o) => cluster.createReviews(buildAccessReviews([...questions, CLUSTER_ADMIN_QUESTION]), o)),
    run((o) => cluster.createReviews([SELF_SUBJECT_REVIEW], o)),
    run((o) => cluster.listNodes(o)),
    claim === undefined ? undefined : run((o) => cluster.getPersistentVolumeClaim(namespace, claim, o)),
  ]);
  const clusterCheck = checkCluster(server, context, client.value.clientVersion, client.value.name);
  const checks: DoctorCheck[] = [
    kubectlCheck,
    ...(view.ok
      ? []
      : [{ name: "kubeconfig", status: "fail" as const, summary: `kubectl cannot use it: ${view.said}` }]),
    clusterCheck,
  ];
  // /version is readable by everyone: when it fails, every other call would fail the same way; say it once.
  if (!server.ok) {
    const why = isUnreachable(server)
      ? "the cluster cannot be reached"
      : server.kind === "unauthorized"
        ? "the API server does not accept the credential"
        : "the API server refused the version request";
    const skip = (name: string): DoctorCheck => ({ name, status: "skip", summary: why });
    const skipClaim = claim === undefined ? [] : [skip(CLAIM_CHECK)];
    return {
      namespace,
      checks: [
        ...checks,
        skip("namespace"),
        ...permissions.map((p) => skip(permissionName(p))),
        skip("credential"),
        skip("nodes"),
        ...skipClaim,
      ],
    };
  }
  const namespaceCheck = await checkNamespace(namespaceRead, namespace, () =>
    run((o) => cluster.createJob(namespace, buildProbeManifest(namespace), { ...o, dryRun: true })),
  );
  const answers = reviews.ok ? readAccessAnswers(reviews.value, [...questions, CLUSTER_ADMIN_QUESTION]) : undefined;
  const permissionChecks = permissions.map((rule, i) =>
    checkPermission(
      rule,
      namespace,
      reviews,
      questionsByRule[i]!.map((q) => [q.verb, answers?.get(q)] as const),
    ),
  );
  const admin = answers?.get(CLUSTER_ADMIN_QUESTION);
  const user = whoami.ok ? readReviewedUser(whoami.value[0]) : undefined;
  const claimCheck = claim === undefined || claimRead === undefined ? [] : [checkClaim(claimRead, claim, namespace)];
  return {
    namespace,
    checks: [
      ...checks,
      namespaceCheck,
      ...permissionChecks,
      checkCredential(context?.credential, user, admin?.allowed, now(), options.expiryWarningMs),
      checkNodes(nodes),
      ...claimCheck,
    ],
  };
}

const CLAIM_CHECK = "cache claim";

/**
 * The PVC cache backend's claim: it must exist (a pod naming a missing claim stays Pending until the run's pod
 * timeout), not be Terminating, and be Bound (or it binds when the first pod lands: WaitForFirstConsumer); one that
 * only one node can mount (not ReadWriteMany) is a warning, since runs on other nodes wait for it.
 */
function checkClaim(read: CallResult<unknown>, claim: string, namespace: string): DoctorCheck {
  const name = CLAIM_CHECK;
  if (!read.ok) {
    if (read.kind === "not-found")
      return {
        name,
        status: "fail",
        summary: `${claim} does not exist in ${namespace}: create it once (README: The cache claim), or drop --cache-pvc`,
      };
    if (read.kind === "forbidden")
      return {
        name,
        status: "skip",
        summary: `${claim} is not readable by this credential (a run needs no access to it; a pod that names a missing claim stays Pending)`,
      };
    return { name, status: "warn", summary: `cannot read ${claim}: ${read.said}` };
  }
  const object = (read.value ?? {}) as {
    metadata?: { deletionTimestamp?: string };
    spec?: { accessModes?: string[] };
    status?: { phase?: string; capacity?: { storage?: string } };
  };
  if (object.metadata?.deletionTimestamp)
    return {
      name,
      status: "fail",
      summary: `${claim} is being deleted (Terminating): pods that name it will not start`,
    };
  const modes = object.spec?.accessModes ?? [];
  const facts = [object.status?.phase ?? "no phase", object.status?.capacity?.storage, modes.join(",")]
    .filter((f) => f)
    .join(", ");
  if (object.status?.phase !== "Bound")
    return {
      name,
      status: "warn",
      summary: `${claim} is ${object.status?.phase ?? "not bound"} (${facts}): the first run waits until it binds, which never happens if no volume can be provisioned`,
    };
  if (!modes.includes("ReadWriteMany"))
    return {
      name,
      status: "warn",
      summary: `${claim} exists (${facts}), but only pods on one node can mount it: a run scheduled elsewhere waits; ReadWriteMany lets concurrent runs share it`,
    };
  return { name, status: "ok", summary: `${claim} exists (${facts})` };
}

function checkKubectl(client: CallResult<TransportFacts>): DoctorCheck {
  if (!client.ok) return { name: "kubectl", status: "fail", summary: client.said };
  if (client.value.name === "api")
    return {
      name: "transport",
      status: "ok",
      summary: "api: the Kubernetes API spoken in-process (no kubectl), exec over WebSocket v5.channel.k8s.io",
    };
  const { clientVersion: version, binary = "kubectl" } = client.value;
  if (!version) return { name: "kubectl", status: "warn", summary: `${binary} runs but did not say its version` };
  const judged = judgeKubectlVersion(version);
  return { name: "kubectl", status: judged.status, summary: `${version.gitVersion} (${binary}): ${judged.note}` };
}

function checkCluster(
  server: CallResult<ServerVersion>,
  context: ContextFacts | undefined,
  clientVersion: ServerVersion | undefined,
  transport: TransportFacts["name"] = "kubectl",
): DoctorCheck {
  const at = context?.server ? ` at ${context.server}` : "";
  if (!server.ok) {
    if (isUnreachable(server))
      return { name: "cluster", status: "fail", summary: `not reachable${at}: ${server.said}` };
    if (server.kind === "unauthorized")
      return {
        name: "cluster",
        status: "fail",
        summary: `reachable${at}, but it does not accept the credential (unknown, expired or revoked): ${server.said}`,
      };
    return {
      name: "cluster",
      status: "fail",
      summary: `reachable${at}, but it refused the version request: ${server.said}`,
    };
  }
  const version = server.value;
  // Before 1.30 an API server passes a WebSocket exec to the kubelet, which ignores the CLOSE that ends stdin.
  if (transport === "api" && (version.major < 1 || (version.major === 1 && version.minor < 30))) {
    return {
      name: "cluster",
      status: "fail",
      summary: `reachable${at}, Kubernetes ${version.gitVersion}: the api transport's exec (WebSocket v5.channel.k8s.io) needs 1.30 or later; use --transport kubectl`,
    };
  }
  const skew = describeSkew(clientVersion, version);
  return {
    name: "cluster",
    status: skew ? "warn" : "ok",
    summary: `reachable${at}, Kubernetes ${version.gitVersion}${skew ? `; ${skew}` : ""}`,
  };
}

/** The Job a server-side dry run creates to learn whether the namespace exists where namespaces cannot be read. */
function buildProbeManifest(namespace: string): IJob {
  const name = `knotless-doctor-${randomBytes(4).toString("hex")}`;
  return buildJobManifest({
    jobName: name,
    namespace,
    runId: name,
    runIdLabel: name,
    image: "busybox:1.36",
    cpu: "10m",
    memory: "16Mi",
    budgetSeconds: 60,
    createToken: "doctor",
  });
}

async function checkNamespace(
  read: CallResult<unknown>,
  namespace: string,
  dryRunCreate: () => Promise<CallResult<unknown>>,
): Promise<DoctorCheck> {
  const name = "namespace";
  if (read.ok) {
    const phase = (read.value as { status?: { phase?: unknown } } | null)?.status?.phase;
    if (phase === "Terminating")
      return { name, status: "fail", summary: `${namespace} is being deleted (Terminating)` };
    return { name, status: "ok", summary: `${namespace} exists` };
  }
  if (read.kind === "not-found")
    return { name, status: "fail", summary: `${namespace} does not exist: create it, or pass --namespace` };
  if (read.kind !== "forbidden")
    return { name, status: "fail", summary: `cannot read namespace ${namespace}: ${read.said}` };
  // A scoped credential cannot read namespaces (cluster-scoped): a server-side dry run of a Job tells instead.
  const probe = await dryRunCreate();
  if (probe.ok)
    return {
      name,
      status: "ok",
      summary: `${namespace} accepts Jobs (namespaces are not readable by this credential; checked with a server-side dry run)`,
    };
  if (probe.kind === "not-found")
    return { name, status: "fail", summary: `${namespace} does not exist (a dry-run create says: ${probe.said})` };
  return {
    name,
    status: "warn",
    summary: `cannot tell whether ${namespace} exists: this credential may not read namespaces, and a dry-run create of a Job failed (${probe.said})`,
  };
}

function permissionName(rule: ApiPermission): string {
  return `permission ${rule.apiGroup === "" ? rule.resource : `${rule.resource}.${rule.apiGroup}`}`;
}

function checkPermission(
  rule: ApiPermission,
  namespace: string,
  reviews: CallResult<unknown>,
  answers: ReadonlyArray<readonly [string, { allowed: boolean } | undefined]>,
): DoctorCheck {
  const name = permissionName(rule);
  if (!reviews.ok)
    return { name, status: "fail", summary: `could not ask the API server (SelfSubjectAccessReview): ${reviews.said}` };
  const denied = answers.filter(([, answer]) => answer?.allowed === false).map(([verb]) => verb);
  const unanswered = answers.filter(([, answer]) => answer === undefined).map(([verb]) => verb);
  if (denied.length > 0)
    return {
      name,
      status: "fail",
      summary: `missing in ${namespace}: ${denied.join(", ")} (needs ${rule.verbs.join(", ")})`,
    };
  if (unanswered.length > 0)
    return { name, status: "warn", summary: `no answer for ${unanswered.join(", ")} in ${namespace}` };
  return { name, status: "ok", summary: `${rule.verbs.join(", ")} in ${namespace}` };
}

/** What the credential is and whether it expires; a cluster-admin credential is a warning (use a scoped one). */
function checkCredential(
  credential: Credential | undefined,
  user: string | undefined,
  isAdmin: boolean | undefined,
  now: number,
  warnWithinMs: number,
): DoctorCheck {
  const parts: string[] = [];
  let status: DoctorCheck["status"] = "ok";
  const expiry = (expiresAt: number | undefined): string => {
    if (expiresAt === undefined) return "expiry unknown";
    const left = expiresAt - now;
    if (left <= 0) {
      status = worseStatus(status, "fail");
      return `expired ${formatDuration(-left)} ago (${new Date(expiresAt).toISOString()})`;
    }
    if (left < warnWithinMs) status = worseStatus(status, "warn");
    return `expires in ${formatDuration(left)} (${new Date(expiresAt).toISOString()})`;
  };
  if (user) parts.push(`user ${user}`);
  switch (credential?.kind) {
    case undefined:
      parts.push("the kubeconfig could not be read");
      break;
    case "token":
      parts.push(
        credential.jwt
          ? `token (JWT${credential.jwt.subject ? ` for ${credential.jwt.subject}` : ""}), ${expiry(credential.jwt.expiresAt)}`
          : "token, expiry unknown",
      );
      break;
    case "token-file":
      parts.push("token file, expiry unknown");
      break;
    case "client-certificate":
      parts.push(
        `client certificate${credential.subject ? ` (${credential.subject})` : ""}, ${expiry(credential.expiresAt)}`,
      );
      break;
    case "exec":
      parts.push(`exec plugin ${credential.command}, expiry unknown`);
      break;
    case "auth-provider":
      parts.push(`auth provider ${credential.name}, expiry unknown`);
      break;
    case "basic":
      parts.push("user name and password, expiry unknown");
      break;
    case "none":
      parts.push("no credential in the kubeconfig");
      break;
  }
  if (isAdmin) {
    status = worseStatus(status, "warn");
    parts.push(
      "cluster-admin (may do anything in every namespace): a scoped credential is safer, see `knotless-runner-k8s credentials`",
    );
  }
  return { name: "credential", status, summary: parts.join("; ") };
}

function checkNodes(nodes: CallResult<unknown[]>): DoctorCheck {
  const name = "nodes";
  if (!nodes.ok) {
    if (nodes.kind === "forbidden")
      return { name, status: "skip", summary: "not visible to this credential (nodes are cluster-scoped)" };
    return { name, status: "warn", summary: `cannot list them: ${nodes.said}` };
  }
  const items = nodes.value as Array<{ status?: { conditions?: Array<{ type?: string; status?: string }> } }>;
  if (items.length === 0)
    return {
      name,
      status: "ok",
      summary: "none now: the first run waits for one to be rented (scale from zero, minutes)",
    };
  const ready = items.filter((node) =>
    node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  ).length;
  return { name, status: "ok", summary: `${items.length} node${items.length === 1 ? "" : "s"}, ${ready} ready` };
}

/** The report as text: one aligned line per check, then a verdict line. */
export function formatDoctorReport(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.map((c) => `${c.status.padEnd(4)}  ${c.name.padEnd(width)}  ${c.summary}`);
  const failed = report.checks.filter((c) => c.status === "fail").length;
  const warned = report.checks.filter((c) => c.status === "warn").length;
  const verdict =
    failed > 0
      ? `doctor: ${failed} failed, ${warned} warning${warned === 1 ? "" : "s"}`
      : warned > 0
        ? `doctor: ready, ${warned} warning${warned === 1 ? "" : "s"}`
        : "doctor: ready";
  return `${[...lines, verdict].join("\n")}\n`;
}

/** The report as JSON for machines: `ok` is false when a check failed. */
export function formatDoctorJson(report: DoctorReport): string {
  return `${JSON.stringify({ ok: !report.checks.some((c) => c.status === "fail"), namespace: report.namespace, checks: report.checks }, null, 2)}\n`;
}
