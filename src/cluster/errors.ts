// The typed errors of every cluster call, whatever the transport: callers ask `instanceof`, never read the transport's text.

/** Which kind of failure a ClusterError is: a discriminant for `switch`, one per class below. */
export type ClusterErrorCode =
  | "not-found"
  | "already-exists"
  | "conflict"
  | "forbidden"
  | "unauthorized"
  | "unavailable"
  | "timeout"
  | "cut-stream"
  | "invalid"
  | "config"
  | "unreadable-answer"
  | "other";

/**
 * A cluster call that failed. `message` is one line in the transport's or the server's words (kubectl's last stderr
 * line, the API's Status message), fit to quote after what the caller was doing; it never holds a secret the call
 * carried. Construct the subclasses; `ClusterError` itself stands for a failure no subclass names ("other").
 */
export class ClusterError extends Error {
  override name = "ClusterError";
  constructor(
    readonly code: ClusterErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The object does not exist (404). */
export class NotFoundError extends ClusterError {
  override name = "NotFoundError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("not-found", message, options);
  }
}

/** An object of that name exists already (409 AlreadyExists): a create found one. */
export class AlreadyExistsError extends ClusterError {
  override name = "AlreadyExistsError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("already-exists", message, options);
  }
}

/** A precondition or resourceVersion did not match (409 Conflict): the object changed since the caller read it. */
export class ConflictError extends ClusterError {
  override name = "ConflictError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("conflict", message, options);
  }
}

/**
 * The API server refused the call (403): the identity lacks a permission. `verb` and `resource` (`jobs.batch`,
 * `pods/exec`) name it when the server said which. Final: retrying cannot grant a permission.
 */
export class ForbiddenError extends ClusterError {
  override name = "ForbiddenError";
  constructor(
    message: string,
    readonly verb?: string,
    readonly resource?: string,
    options?: { cause?: unknown },
  ) {
    super("forbidden", message, options);
  }
}

/** The API server did not accept the credential (401): unknown, expired or revoked. Final. */
export class UnauthorizedError extends ClusterError {
  override name = "UnauthorizedError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("unauthorized", message, options);
  }
}

/**
 * Why a call may succeed if made again:
 * - `unreachable`: no answer from the API server at all (refused, reset, unresolvable, TLS handshake timeout);
 * - `server`: the server answered with a transient failure (500, 503, 429, etcd trouble);
 * - `exec-not-ready`: the exec could not be set up (a fresh node, a kubelet not ready, the container not there yet):
 *   nothing ran in the pod.
 */
export type UnavailableReason = "unreachable" | "server" | "exec-not-ready";

/** The call failed for a reason that may pass: retry within a budget (src/core/retry.ts). */
export class UnavailableError extends ClusterError {
  override name = "UnavailableError";
  constructor(
    readonly reason: UnavailableReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("unavailable", message, options);
  }
}

/** The call got no answer within its timeout (the client's or the server's 504). Retryable, like UnavailableError. */
export class TimeoutError extends ClusterError {
  override name = "TimeoutError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("timeout", message, options);
  }
}

/**
 * An exec's stream ended without the command's exit status (a dropped connection, a transport killed, a socket
 * closed without its status frame): what ran in the pod may still be running, or may have ended either way. Never
 * a success, never an exit code.
 */
export class CutStreamError extends ClusterError {
  override name = "CutStreamError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("cut-stream", message, options);
  }
}

/** The server refused the request as malformed or not allowed by validation or admission (400, 422): its message says why. */
export class InvalidError extends ClusterError {
  override name = "InvalidError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid", message, options);
  }
}

/**
 * The transport cannot use the kubeconfig (malformed, no such context, an auth kind it cannot do): bad input, and
 * no request was sent.
 */
export class ConfigError extends ClusterError {
  override name = "ConfigError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("config", message, options);
  }
}

/**
 * The server did what was asked (the object was created), but the transport could not read what it answered, so the
 * caller lacks something it needed from it (the namespace a create landed in). The object exists.
 */
export class UnreadableAnswerError extends ClusterError {
  override name = "UnreadableAnswerError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("unreadable-answer", message, options);
  }
}

/** Whether a failed call may succeed if made again (UnavailableError, TimeoutError). */
export function isRetryable(error: unknown): boolean {
  return error instanceof UnavailableError || error instanceof TimeoutError;
}
