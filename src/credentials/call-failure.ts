// Turns a failed admin-side kubectl call of `credentials` into its typed error: bad kubeconfig, refusal, unreachable, or other.
import { InfraError, InputError } from "../errors.js";
import type { KubectlOutput } from "../cluster/kubectl/kubectl.js";
import { classifyKubectlFailure, findPermissionError, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";

/** The error for a call that exited non-zero while `doing` something; `context` is appended (what was done before). */
export function describeCallFailure(result: KubectlOutput, doing: string, context = ""): InputError | InfraError {
  const tail = context ? `; ${context}` : "";
  const kind = classifyKubectlFailure(result.stderr);
  if (kind === "kubeconfig") return new InputError(`kubectl cannot use the kubeconfig: ${summarizeStderr(result.stderr)}`);
  const denied = findPermissionError(result.stderr, doing);
  if (denied) {
    // The admin is the one refused here: the hint about `credentials` is for the runner's identity, not this one.
    const message = `${doing}: ${summarizeStderr(result.stderr)} (the admin kubeconfig's identity may not do this${denied.reason === "unauthorized" ? ": its credential was not accepted" : ""})${tail}`;
    return new InfraError(denied.reason, message);
  }
  if (kind === "unreachable") return new InfraError("cluster-unreachable", `${doing}: ${summarizeStderr(result.stderr)}${tail}`);
  return new InfraError("credentials-failed", `${doing}: ${summarizeStderr(result.stderr)}${tail}`);
}
