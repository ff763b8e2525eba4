// Typed errors: bad input, a failed infrastructure, a cancelled run. A failed step is a result, not an error.

/** Input the runner refuses before touching the cluster (exit 2). `location` is `file:line` where known. */
export class InputError extends Error {
  override readonly name = "InputError";
  constructor(
    message: string,
    readonly location?: string,
  ) {
    super(location ? `${location}: ${message}` : message);
  }
}

/** What failed in the infrastructure, for operators and for the result's `error`. */
export type InfraReason =
  | "cluster-unreachable"
  | "create-failed"
  | "pod-timeout"
  | "image-pull"
  | "pod-config"
  | "pod-lost"
  /** A workflow service exited, could not start, or was not ready within its readiness timeout. */
  | "service-not-ready"
  | "exec-failed"
  | "exec-no-exit-code"
  | "integrity-mismatch"
  | "download-failed"
  | "teardown-failed"
  | "kubectl-missing"
  /** The API server refused or failed a call of an operator command for another reason. */
  | "api-error"
  /** The API server refused a call (403): the kubeconfig's identity lacks a permission the runner needs. */
  | "forbidden"
  /** The API server did not accept the credential (401): unknown, expired or revoked. */
  | "unauthorized"
  /** An admin-side call of `credentials` failed (neither a refusal nor an unreachable cluster). */
  | "credentials-failed"
  /** A git checkout could not be cloned (in the pod or on the host): the repository or the commit was out of reach. */
  | "checkout-failed"
  /** The runner's own disk (the run's directory, its logs, result.json) has no space left: the run cannot be recorded. */
  | "disk-full"
  /** A run whose runner stopped could not be re-attached to: its Job is gone, its pod ended, or the pod lost its state. */
  | "runner-lost"
  /**
   * A serve instance whose Lease lapsed could not read its run's Job to tell whether another instance had taken the
   * run over: it stopped driving the run and left its Job and pod untouched.
   */
  | "ownership-unknown";

/** The cluster, kubectl or the pod failed us (exit 3). Never a verdict on the user's steps. */
export class InfraError extends Error {
  override readonly name = "InfraError";
  constructor(
    readonly reason: InfraReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The run was cancelled by a signal or by the embedding daemon (exit 130). */
export class CancelledError extends Error {
  override readonly name = "CancelledError";
  constructor(message = "run cancelled") {
    super(message);
  }
}

/**
 * Another serve instance took the run over (its Job's owner annotation names it) while this one's Lease had lapsed:
 * this runner stops driving the run at once, leaving its Job and pod to `owner`, and writes no result of its own.
 */
export class RunTakenOverError extends Error {
  override readonly name = "RunTakenOverError";
  constructor(
    /** The instance the Job's owner annotation names (undefined: the annotation is gone). */
    readonly owner: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The service's own state (its database, its state directory) cannot be opened or written: it does not start (exit 4). */
export class StateError extends Error {
  override readonly name = "StateError";
}

/** Returns a one-line message for any thrown value. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
