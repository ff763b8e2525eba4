// The runner's words for a call the API server refused (403) or whose credential it did not accept (401): one place for every caller.
import { InfraError } from "../core/errors.js";
import { ForbiddenError, UnauthorizedError } from "./errors.js";

/**
 * The typed InfraError of a refused call, naming what the runner was doing and what to do about it; undefined for
 * any other failure. Such a failure is final: retrying cannot grant a permission.
 */
export function describeRefusal(error: unknown, doing: string): InfraError | undefined {
  if (error instanceof ForbiddenError) {
    return new InfraError(
      "forbidden",
      `${doing}: ${error.message} (the kubeconfig's identity lacks this permission; \`knotless-runner-k8s credentials\` makes one with every permission the runner needs)`,
      { cause: error },
    );
  }
  if (error instanceof UnauthorizedError) {
    return new InfraError(
      "unauthorized",
      `${doing}: ${error.message} (the kubeconfig's credential is unknown, expired or revoked; \`knotless-runner-k8s credentials\` issues a fresh one)`,
      { cause: error },
    );
  }
  return undefined;
}
