// Kubernetes Status objects and the error class that carries one to the HTTP edge.

export type StatusReason =
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Invalid"
  | "BadRequest"
  | "InternalError"
  | "MethodNotAllowed"
  | "UnsupportedMediaType"
  | "Expired"
  | "ServiceUnavailable"
  | "Unauthorized"
  | "Forbidden"
  | "TooManyRequests";

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** An API failure with its HTTP code and Status reason; thrown by handlers, rendered once at the edge. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  readonly details: StatusDetails | undefined;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): Status {
    return buildFailureStatus(this.code, this.reason, this.message, this.details);
  }
}

export function buildFailureStatus(code: number, reason: string, message: string, details?: StatusDetails): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

export function buildSuccessStatus(details?: StatusDetails): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    ...(details ? { details } : {}),
    code: 200,
  };
}

/** `jobs.batch` or `pods`: how Kubernetes names a resource in messages. */
export function formatQualifiedResource(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

export function notFound(resource: string, group: string, name: string): ApiError {
  return new ApiError(404, "NotFound", `${formatQualifiedResource(resource, group)} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });
}

export function alreadyExists(resource: string, group: string, name: string): ApiError {
  return new ApiError(409, "AlreadyExists", `${formatQualifiedResource(resource, group)} "${name}" already exists`, {
    name,
    group,
    kind: resource,
  });
}

export function conflict(resource: string, group: string, name: string, why: string): ApiError {
  return new ApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${formatQualifiedResource(resource, group)} "${name}": ${why}`,
    {
      name,
      group,
      kind: resource,
    },
  );
}

export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): ApiError {
  const list = causes.map((c) => `${c.field}: ${c.message}`).join(", ");
  return new ApiError(422, "Invalid", `${kind}${group ? "." + group : ""} "${name}" is invalid: ${list}`, {
    name,
    group,
    kind,
    causes,
  });
}

/** An admission refusal (Pod Security, say): 403 Forbidden with the admission plugin's message. */
export function forbiddenByAdmission(resource: string, name: string, message: string): ApiError {
  return new ApiError(403, "Forbidden", message, { name, kind: resource });
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, "BadRequest", message);
}

export function internalError(message: string): ApiError {
  return new ApiError(500, "InternalError", `Internal error occurred: ${message}`, { causes: [{ message }] });
}
