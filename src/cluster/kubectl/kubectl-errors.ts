// Reads what a failed kubectl call said and maps it to the cluster's typed errors: the one place that reads kubectl's English.
import type { InfraError } from "../../core/errors.js";
import { describeRefusal } from "../refusal.js";
import {
  AlreadyExistsError,
  ClusterError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  InvalidError,
  NotFoundError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  type ClusterError as ClusterErrorType,
} from "../errors.js";

export type KubectlFailureKind =
  /** kubectl could not use the kubeconfig (malformed, or no such --context): bad input, no request was sent. */
  | "kubeconfig"
  /** The API server cannot be reached at all. */
  | "unreachable"
  /** The exec could not be set up (fresh node, kubelet not ready): nothing ran in the pod. */
  | "exec-not-ready"
  /** The API server answered with a transient error (500, 503, 429). */
  | "transient"
  /** The call got no answer in time (the server's 504 Timeout, or the client's request timeout). */
  | "timeout"
  /** The server refused the request as malformed or invalid (400 BadRequest, 422 Invalid). */
  | "invalid"
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
  [
    "unauthorized",
    /^error: You must be logged in to the server|^Error from server \(Unauthorized\)|the server has asked for the client to provide credentials/m,
  ],
  [
    "exec-not-ready",
    /unable to upgrade connection|error dialing backend|container not found|proxy error from .* while dialing/i,
  ],
  ["already-exists", /\(AlreadyExists\)|already exists/i],
  ["not-found", /\(NotFound\)/],
  ["conflict", /\(Conflict\)/],
  // kubectl prints a 422 as `The Job "x" is invalid: ...`, without the reason in parentheses.
  ["invalid", /\((Invalid|BadRequest)\)|^The \S+ "[^"]*" is invalid: /m],
  // After transient's etcd words (an InternalError that says "request timed out" is the server's, not a timeout of ours).
  [
    "transient",
    /\((InternalError|ServiceUnavailable|TooManyRequests)\)|etcdserver|the server is currently unable|TLS handshake timeout|http2: server sent GOAWAY/i,
  ],
  ["timeout", /\((Timeout|ServerTimeout)\)|Client\.Timeout|context deadline exceeded/i],
  [
    "unreachable",
    /Unable to connect to the server|The connection to the server .* was refused|connection refused|no such host|i\/o timeout|network is unreachable|connection reset by peer|dial tcp/i,
  ],
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
 * The typed InfraError of a call the API server refused (403, 401), by kubectl's stderr; undefined for any other
 * failure (src/cluster/refusal.ts says it).
 */
export function findPermissionError(stderr: string, doing: string): InfraError | undefined {
  return describeRefusal(mapKubectlFailure(stderr), doing);
}

/** What a Forbidden message names: `User "u" cannot patch resource "jobs" in API group "batch"` → patch, jobs.batch. */
function readRefusedPermission(stderr: string): { verb?: string; resource?: string } {
  const match = /cannot (\S+) resource "([^"]+)"(?: in API group "([^"]*)")?/.exec(stderr);
  if (!match) return {};
  const [, verb, resource, group] = match;
  const [name, sub] = resource!.split("/");
  return { verb: verb!, resource: `${name}${group ? `.${group}` : ""}${sub ? `/${sub}` : ""}` };
}

/**
 * The typed error of a kubectl call that exited non-zero, by its stderr: every transport-neutral caller sees only
 * this. The message is kubectl's last meaningful line (summarizeStderr).
 */
export function mapKubectlFailure(stderr: string): ClusterErrorType {
  const said = summarizeStderr(stderr);
  switch (classifyKubectlFailure(stderr)) {
    case "kubeconfig":
      return new ConfigError(said);
    case "forbidden": {
      const { verb, resource } = readRefusedPermission(stderr);
      return new ForbiddenError(said, verb, resource);
    }
    case "unauthorized":
      return new UnauthorizedError(said);
    case "exec-not-ready":
      return new UnavailableError("exec-not-ready", said);
    case "already-exists":
      return new AlreadyExistsError(said);
    case "not-found":
      return new NotFoundError(said);
    case "conflict":
      return new ConflictError(said);
    case "transient":
      return new UnavailableError("server", said);
    case "timeout":
      return new TimeoutError(said);
    case "invalid":
      return new InvalidError(said);
    case "unreachable":
      return new UnavailableError("unreachable", said);
    case "other":
      return new ClusterError("other", said);
  }
}
