// Maps what the API server answered (an HTTP status and its Status body), or why it did not, to the seam's typed errors.
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
} from "../errors.js";

/** The kubeconfig cannot be used by this transport (`location`: file or file:line): bad input, no request sent. */
export function kubeconfigError(message: string, location: string): ConfigError {
  return new ConfigError(location ? `${location}: ${message}` : message);
}

/** 410 Gone: the resourceVersion a watch asked for is older than the server keeps; the caller lists again. */
export class ExpiredError extends ClusterError {
  override name = "ExpiredError";
  constructor(message: string) {
    super("other", message);
  }
}

/** The parts of a Kubernetes Status this module reads. */
interface StatusBody {
  readonly kind?: string;
  readonly message?: string;
  readonly reason?: string;
}

/** What a request was, for a 403's error (`get` on `jobs.batch`, as `kubectl auth can-i` names it). */
export interface RequestKind {
  readonly verb: string;
  readonly resource: string;
}

/** The typed error for a non-2xx answer; `body` is the parsed response (a Status when the server sent one). */
export function mapStatusError(httpStatus: number, body: unknown, request: RequestKind): ClusterError {
  const status = isStatus(body) ? body : undefined;
  const message = status?.message || `the server answered HTTP ${httpStatus}`;
  const reason = status?.reason;
  if (httpStatus === 404) return new NotFoundError(message);
  if (httpStatus === 409)
    return reason === "AlreadyExists" ? new AlreadyExistsError(message) : new ConflictError(message);
  if (httpStatus === 403) return new ForbiddenError(message, request.verb, request.resource);
  if (httpStatus === 401) return new UnauthorizedError(status?.message || "Unauthorized");
  if (httpStatus === 400 || httpStatus === 422) return new InvalidError(message);
  if (httpStatus === 504 || reason === "Timeout" || reason === "ServerTimeout") return new TimeoutError(message);
  if (httpStatus === 429 || httpStatus >= 500) return new UnavailableError("server", message);
  if (httpStatus === 410) return new ExpiredError(message);
  return new ClusterError("other", message);
}

/** A request that got no answer: refused, reset, unresolvable, a TLS failure, or over its deadline. */
export function mapTransportError(error: unknown, what: string): ClusterError {
  if (error instanceof ClusterError) return error;
  const code = (error as { code?: string }).code ?? "";
  const text = error instanceof Error ? error.message : String(error);
  if (/^UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT$/.test(code) || (error as Error).name === "TimeoutError") {
    return new TimeoutError(`${what}: no answer in time (${code || text})`, { cause: error });
  }
  const words = SOCKET_ERROR_WORDS[code];
  const said = `${text}${code && !text.includes(code) ? ` (${code})` : ""}${words ? ` (${words})` : ""}`;
  return new UnavailableError("unreachable", `${what}: ${said}`, { cause: error });
}

/** What node's socket error codes mean, in the words kubectl's (Go's) messages use, so an operator reads the same either way. */
const SOCKET_ERROR_WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset by peer",
  ENOTFOUND: "no such host",
  EHOSTUNREACH: "no route to host",
  ENETUNREACH: "network is unreachable",
  ETIMEDOUT: "connection timed out",
};

function isStatus(body: unknown): body is StatusBody {
  return typeof body === "object" && body !== null && (body as StatusBody).kind === "Status";
}
