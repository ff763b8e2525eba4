// The service's errors as XRPC answers: one typed error, and the one place that maps every thrown value to an HTTP status and an error name.
import { CancelledError, InfraError, InputError, describeError } from "../errors.js";
import { WorkflowError } from "../workflow/workflow-errors.js";

/** An XRPC error the service answers with: `{error, message}` and this HTTP status. */
export class XrpcError extends Error {
  override readonly name = "XrpcError";
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

export interface XrpcErrorBody {
  readonly status: number;
  readonly body: { readonly error: string; readonly message: string };
}

/**
 * Maps anything thrown by a handler: an XrpcError as it is; a bad workflow 400 InvalidWorkflow; other bad input
 * (InputError) 400 InvalidRequest; a cluster failure 502; anything else 500 without
 * its detail (a bug's message could quote a request).
 */
export function mapErrorToHttp(error: unknown): XrpcErrorBody {
  if (error instanceof XrpcError) return { status: error.status, body: { error: error.error, message: error.message } };
  if (error instanceof WorkflowError) return { status: 400, body: { error: "InvalidWorkflow", message: describeError(error) } };
  if (error instanceof InputError) return { status: 400, body: { error: "InvalidRequest", message: describeError(error) } };
  if (error instanceof InfraError) return { status: 502, body: { error: "ClusterError", message: `${error.reason}: ${error.message}` } };
  if (error instanceof CancelledError) return { status: 503, body: { error: "ShuttingDown", message: error.message } };
  return { status: 500, body: { error: "InternalServerError", message: "internal error (see the service's log)" } };
}
