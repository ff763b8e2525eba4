// Turns a failed admin-side call of `credentials` into its typed error: bad kubeconfig, refusal, unreachable, or other.
import {
  ClusterError,
  ConfigError,
  ForbiddenError,
  UnauthorizedError,
  UnavailableError,
} from "../../cluster/errors.js";
import { InfraError, InputError, describeError } from "../../core/errors.js";

/** The error for a call that failed while `doing` something; `context` is appended (what was done before). */
export function describeCallFailure(error: unknown, doing: string, context = ""): Error {
  if (!(error instanceof ClusterError)) return error instanceof Error ? error : new Error(String(error));
  const tail = context ? `; ${context}` : "";
  if (error instanceof ConfigError) return new InputError(`kubectl cannot use the kubeconfig: ${error.message}`);
  if (error instanceof ForbiddenError || error instanceof UnauthorizedError) {
    // The admin is the one refused here: the hint about `credentials` is for the runner's identity, not this one.
    const unauthorized = error instanceof UnauthorizedError;
    const message = `${doing}: ${error.message} (the admin kubeconfig's identity may not do this${unauthorized ? ": its credential was not accepted" : ""})${tail}`;
    return new InfraError(unauthorized ? "unauthorized" : "forbidden", message);
  }
  if (error instanceof UnavailableError && error.reason === "unreachable")
    return new InfraError("cluster-unreachable", `${doing}: ${error.message}${tail}`);
  return new InfraError("credentials-failed", `${doing}: ${describeError(error)}${tail}`);
}
