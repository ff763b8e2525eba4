// Maps what the API server answered (an HTTP status and its Status body) to the seam's typed errors, in one place.
import { InputError } from "../../errors.js";

/** The kinds of failure the seam types; `ApiError.kind` until the seam's classes replace it. */
export type ApiFailureKind =
  | "not-found"
  | "already-exists"
  | "conflict"
  | "forbidden"
  | "unauthorized"
  | "unavailable"
  | "timeout"
  | "cut-stream"
  | "invalid"
  | "other";

/** A failed API call: `message` is the server's Status message (or the socket's error), never a credential. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly kind: ApiFailureKind,
    message: string,
    readonly details: { readonly httpStatus?: number; readonly verb?: string; readonly resource?: string; readonly reason?: "unreachable" | "server" | "exec-not-ready" } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The kubeconfig cannot be used by this transport: bad input, no request sent. */
export function kubeconfigError(message: string, location: string): Error {
  return new InputError(message, location || undefined);
}

/** The parts of a Kubernetes Status this module reads. */
interface StatusBody {
  readonly kind?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: { readonly kind?: string; readonly group?: string; readonly name?: string };
}

/**
 * The typed error for a non-2xx answer. `body` is the parsed response (a Status when the server sent one); `verb` and
 * `resource` say what was asked (the error names them for a 403, as `kubectl auth can-i` would).
 */
export function mapStatusError(httpStatus: number, body: unknown, request: { readonly verb: string; readonly resource: string }): ApiError {
  const status = isStatus(body) ? body : undefined;
  const message = status?.message || `the server answered HTTP ${httpStatus}`;
  const reason = status?.reason;
  const details = { httpStatus, verb: request.verb, resource: request.resource };
  if (httpStatus === 404) return new ApiError("not-found", message, details);
  if (httpStatus === 409) return new ApiError(reason === "AlreadyExists" ? "already-exists" : "conflict", message, details);
  if (httpStatus === 403) return new ApiError("forbidden", message, details);
  if (httpStatus === 401) return new ApiError("unauthorized", message || "Unauthorized", details);
  if (httpStatus === 400 || httpStatus === 422) return new ApiError("invalid", message, details);
  if (httpStatus === 504 || reason === "Timeout" || reason === "ServerTimeout") return new ApiError("timeout", message, details);
  if (httpStatus === 429 || httpStatus >= 500) return new ApiError("unavailable", message, { ...details, reason: "server" });
  if (httpStatus === 410) return new ApiError("other", message, details);
  return new ApiError("other", message, details);
}

/** A request that got no answer: refused, reset, unresolvable, TLS failure, or over its deadline. */
export function mapTransportError(error: unknown, what: string): ApiError {
  if (error instanceof ApiError) return error;
  const code = (error as { code?: string }).code ?? "";
  const text = error instanceof Error ? error.message : String(error);
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || (error as Error).name === "TimeoutError") {
    return new ApiError("timeout", `${what}: no answer in time (${code || text})`, {}, { cause: error });
  }
  return new ApiError("unavailable", `${what}: ${text}${code && !text.includes(code) ? ` (${code})` : ""}`, { reason: "unreachable" }, { cause: error });
}

function isStatus(body: unknown): body is StatusBody {
  return typeof body === "object" && body !== null && (body as StatusBody).kind === "Status";
}
