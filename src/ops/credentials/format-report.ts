// Pure: what `credentials` prints: the issue and revoke reports, and the --dry-run plan (every object and call, never a token).
import { stringify } from "../../core/lazy-yaml.js";
import { formatDuration } from "../../core/duration.js";
import type { ClusterTarget } from "../../cluster/cluster.js";
import type { TransportName } from "../../cluster/transports/open-cluster.js";
import { formatPlannedCalls } from "../../cluster/transports/format-calls.js";
import {
  buildTokenRequest,
  formatServiceAccountUser,
  type CredentialIdentity,
  type PolicyRule,
} from "./credential-objects.js";
import { buildRequestObjects, planIssueCalls, planRevokeCalls, type CredentialRequest } from "./credential-plan.js";
import type { IssueReport } from "./issue-credentials.js";
import type { RevokeReport } from "./revoke-credentials.js";
import { describeScopedKubeconfig } from "./scoped-kubeconfig.js";

/** `jobs.batch: create, delete, get, list`: a rule as people read it. */
export function formatRule(rule: PolicyRule): string {
  const group = rule.apiGroups[0] ?? "";
  const [resource, sub] = (rule.resources[0] ?? "").split("/");
  return `${resource}${group ? `.${group}` : ""}${sub ? `/${sub}` : ""}: ${rule.verbs.join(", ")}`;
}

/** The lines printed after an issue. */
export function formatIssueReport(report: IssueReport, identity: CredentialIdentity): string {
  const lines = [`credential ${formatServiceAccountUser(identity)} on ${report.server}:`];
  for (const { ref, action } of report.objects) {
    const rules = ref.startsWith("role.") ? ` (${report.rules.map(formatRule).join("; ")})` : "";
    lines.push(`  ${ref} ${action}${rules}`);
  }
  const asked = report.requestedSeconds * 1000;
  const lifetime = report.expiresAt.getTime() - Date.now();
  const capped = lifetime < asked - 60_000 ? ` (the API server cut the ${formatDuration(asked)} asked for)` : "";
  lines.push(`  token issued, expires ${report.expiresAt.toISOString().replace(/\.\d+Z$/, "Z")}${capped}`);
  lines.push(`  kubeconfig written to ${report.outFile} (mode 0600, namespace ${identity.namespace})`);
  if (report.objects.every((o) => o.action === "unchanged")) {
    lines.push(
      "objects unchanged; a fresh token was issued and the file rewritten (earlier tokens stay valid until they expire; --revoke ends them all)",
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The lines printed after a revoke. */
export function formatRevokeReport(report: RevokeReport, identity: CredentialIdentity): string {
  const lines = [`credential ${formatServiceAccountUser(identity)} revoked:`];
  for (const { ref, deleted } of report.objects) lines.push(`  ${ref} ${deleted ? "deleted" : "was not there"}`);
  if (report.removedFile) lines.push(`  removed ${report.removedFile}`);
  if (report.objects.every((o) => !o.deleted)) lines.push("nothing to revoke: none of the objects existed");
  else lines.push("every token of the ServiceAccount is dead with it");
  return `${lines.join("\n")}\n`;
}

/** What --dry-run prints for an issue: the objects, the TokenRequest, the kubeconfig's shape and the calls, in the transport's form first. */
export function renderIssueDryRun(request: CredentialRequest, kubectlPath: string, transport: TransportName): string {
  const objects = buildRequestObjects(request);
  const lines = [
    `# credentials --dry-run: nothing is sent to the cluster and no file is written`,
    `# ServiceAccount, Role and RoleBinding (applied: created, corrected or left unchanged)`,
    "---",
    stringify(objects.serviceAccount).trimEnd(),
    "---",
    stringify(objects.role).trimEnd(),
    "---",
    stringify(objects.roleBinding).trimEnd(),
    "---",
    `# TokenRequest for ${formatServiceAccountUser(request.identity)}: ${formatDuration(request.tokenSeconds * 1000)}`,
    stringify(buildTokenRequest(request.tokenSeconds)).trimEnd(),
    "---",
    `# kubeconfig written to ${request.outFile} (mode 0600)`,
    describeScopedKubeconfig(request.identity).trimEnd(),
    "---",
    ...formatPlannedCalls(kubectlPath, request.target, planIssueCalls(request), transport),
  ];
  return `${lines.join("\n")}\n`;
}

/** What --dry-run prints for a revoke. */
export function renderRevokeDryRun(
  target: ClusterTarget,
  identity: CredentialIdentity,
  kubectlPath: string,
  outFile: string | undefined,
  transport: TransportName,
): string {
  const lines = [
    `# credentials --revoke --dry-run: nothing is sent to the cluster and no file is removed`,
    `# deletes ${formatServiceAccountUser(identity)}: its RoleBinding, Role and ServiceAccount (every token of it dies with the ServiceAccount)`,
    ...(outFile ? [`# then removes ${outFile}`] : []),
    ...formatPlannedCalls(kubectlPath, target, planRevokeCalls(identity), transport),
  ];
  return `${lines.join("\n")}\n`;
}
