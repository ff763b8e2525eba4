// Prints planned calls as the chosen transport makes them (API requests or kubectl commands), the other transport's form beside each: for every --dry-run.
import { formatCommand } from "../../events/format-event.js";
import type { ClusterTarget } from "../cluster.js";
import type { PlannedCall } from "../planned-call.js";
import type { TransportName } from "./open-cluster.js";
import { formatApiRequest, type PlannedApiRequest } from "../api/api-request.js";
import { describeApiCall } from "../api/describe-api-call.js";
import { describeKubectlCall } from "../kubectl/describe-kubectl-call.js";

/** A planned call as both transports make it. */
export interface DescribedCall {
  /** The kubectl transport's command (after the binary). */
  readonly args: readonly string[];
  /** The API transport's requests (empty: it makes none, doing the call in its own process). */
  readonly api: readonly PlannedApiRequest[];
  readonly stdin?: string;
  readonly note?: string;
}

/** Each planned call against `target`, as each transport would make it. */
export function describePlannedCalls(target: ClusterTarget, calls: readonly PlannedCall[]): DescribedCall[] {
  return calls.map(({ plan, ...told }) => ({
    args: describeKubectlCall(target, plan),
    api: describeApiCall(target, plan),
    ...told,
  }));
}

/** The heading and the planned calls against `target`, as formatDescribedCalls prints them. */
export function formatPlannedCalls(
  kubectlPath: string,
  target: ClusterTarget,
  calls: readonly PlannedCall[],
  transport: TransportName = "kubectl",
): string[] {
  return formatDescribedCalls(kubectlPath, describePlannedCalls(target, calls), transport);
}

/** The heading of the calls: which transport's form is plain and which is the comment beside it. */
export function describeCallsHeading(transport: TransportName): string {
  return transport === "api"
    ? "# API requests, in order (--transport api); beside each, as `#   kubectl:`, the kubectl command that does the same"
    : "# kubectl calls, in order (--transport kubectl); beside each, as `#   api:`, the request the API transport makes instead";
}

/**
 * The heading, then each planned call as a comment (when, and what goes to stdin), the chosen transport's form
 * plainly (the API requests, or the shell-quoted kubectl command) and the other transport's form as a comment. A call
 * whose `api` is empty is one the API transport makes without a request (reading the kubeconfig).
 */
export function formatDescribedCalls(
  kubectlPath: string,
  calls: readonly DescribedCall[],
  transport: TransportName = "kubectl",
): string[] {
  const lines = [describeCallsHeading(transport)];
  for (const call of calls) {
    const comment = [call.note, call.stdin ? `stdin: ${call.stdin}` : undefined].filter(Boolean).join("; ");
    if (comment) lines.push(`# ${comment}`);
    const command = formatCommand(kubectlPath, call.args);
    const requests = (call.api ?? []).map(formatApiRequest);
    if (transport === "api" && call.api !== undefined && requests.length === 0) {
      lines.push("# (no request: the API transport does this in its own process)", ...asComment("kubectl", command));
    } else if (transport === "api" && requests.length > 0) {
      lines.push(...requests, ...asComment("kubectl", command));
    } else {
      const local =
        call.api !== undefined && requests.length === 0 ? ["no request (done in the runner's own process)"] : [];
      lines.push(command, ...[...requests, ...local].flatMap((request) => asComment("api", request)));
    }
  }
  return lines;
}

/** `#   label: text`, each further line of a multi-line text (a quoted script) commented too. */
function asComment(label: string, text: string): string[] {
  return text.split("\n").map((line, index) => (index === 0 ? `#   ${label}: ${line}` : `#   ${line}`));
}
