// Reads what a failed kubectl call said and classifies it: only kubectl's stderr can tell these apart.
import { InfraError } from "../errors.js";

export type KubectlFailureKind =
  /** kubectl could not use the kubeconfig (malformed, or no such --context): bad input, no request was sent. */
  | "kubeconfig"
  /** The API server cannot be reached at all. */
  | "unreachable"
  /** The exec could not be set up (fresh node, kubelet not ready): nothing ran in the pod. */
  | "exec-not-ready"
  /** The API server answered with a transient error (500, 503, 429, timeout). */
  | "transient"
  | "not-found"
  | "already-exists"
  /** A precondition or resourceVersion did not match: the object changed since the caller read it. */
  | "conflict"
  /** The API server refused the call (403 Forbidden): a permission the identity lacks. */
  | "forbidden"
  /** The API server did not accept the credential (401): unknown, expired or revoked token. */
  | "unauthorized"
  | "other";

const PATTERNS: ReadonlyArray<readonly [KubectlFailureKind, RegExp]> = [
  ["kubeconfig", /^error: (error loading config file |context ".*" does not exist)/m],
  // Before exec-not-ready: a refused exec upgrade must never be retried as a node that is not ready yet.
  ["forbidden", /^Error from server \(Forbidden\)/m],
  // client-go's words for a 401 also end kubectl's validation error when the OpenAPI download was refused (create -f).
  ["unauthorized", /^error: You must be logged in to the server|^Error from server \(Unauthorized\)|the server has asked for the client to provide credentials/m],
  ["exec-not-ready", /unable to upgrade connection|error dialing backend|container not found|proxy error from .* while dialing/i],
  ["already-exists", /\(AlreadyExists\)|already exists/i],
  ["not-found", /\(NotFound\)/],
  ["conflict", /\(Conflict\)/],
  ["transient", /\((InternalError|ServiceUnavailable|Timeout|ServerTimeout|TooManyRequests)\)|etcdserver|the server is currently unable|Client\.Timeout|context deadline exceeded|TLS handshake timeout|http2: server sent GOAWAY/i],
  ["unreachable", /Unable to connect to the server|The connection to the server .* was refused|connection refused|no such host|i\/o timeout|network is unreachable|connection reset by peer|dial tcp/i],
];

/** Classifies a failed call by its stderr (first match wins, in the order above). */
export function classifyKubectlFailure(stderr: string): KubectlFailureKind {
  for (const [kind, pattern] of PATTERNS) if (pattern.test(stderr)) return kind;
  return "other";
}

/** The last meaningful line of kubectl's stderr, for error messages. */
export function summarizeStderr(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !/^command terminated with exit code/.test(line));
  return lines.at(-1) ?? "(kubectl printed nothing)";
}

/**
 * The typed error of a call the API server refused (403) or whose credential it did not accept (401), naming what
 * the runner was doing and what to do about it; undefined for any other failure. Such a failure is final: retrying
 * cannot grant a permission.
 */
export function findPermissionError(stderr: string, doing: string): InfraError | undefined {
  const kind = classifyKubectlFailure(stderr);
  if (kind === "forbidden") {
    return new InfraError("forbidden", `${doing}: ${summarizeStderr(stderr)} (the kubeconfig's identity lacks this permission; \`knotless-runner-k8s credentials\` makes one with every permission the runner needs)`);
  }
  if (kind === "unauthorized") {
    return new InfraError("unauthorized", `${doing}: ${summarizeStderr(stderr)} (the kubeconfig's credential is unknown, expired or revoked; \`knotless-runner-k8s credentials\` issues a fresh one)`);
  }
  return undefined;
}
