// The service's errors as XRPC answers: one typed error, and the one place that maps every thrown value to an HTTP status and an error name.
import { CancelledError, InfraError, InputError, describeError } from "../core/errors.js";
import { WorkflowError } from "../workflow/workflow-errors.js";

/** An XRPC error the service answers with: `{error, message}` and this HTTP status. */
export class XrpcError extends Error {
  override readonly name = "XrpcError";
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    /** Sent as `Retry-After` (seconds): the refusal is temporary (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** `Retry-After` of a full queue (429): a run or two will have started by then. */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 10;
/** `Retry-After` of a service that cannot write its state (503): about how long freeing space takes to be noticed. */
export const STATE_UNWRITABLE_RETRY_AFTER_SECONDS = 30;
/** `Retry-After` of a draining service (503): a restarted one is usually back within this. */
export const SHUTTING_DOWN_RETRY_AFTER_SECONDS = 30;

export interface XrpcErrorBody {
  readonly status: number;
  readonly body: { readonly error: string; readonly message: string };
  /** Extra headers of the answer (`Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Maps anything thrown by a handler: an XrpcError as it is; a bad workflow 400 InvalidWorkflow; other bad input
 * (InputError) 400 InvalidRequest; a cluster failure 502; anything else 500 without
 * its detail (a bug's message could quote a request).
 */
export function mapErrorToHttp(error: unknown): XrpcErrorBody {
  if (error instanceof XrpcError)
    return {
      status: error.status,
      body: { error: error.error, message: error.message },
      headers: error.retryAfterSeconds === undefined ? {} : { "Retry-After": String(error.retryAfterSeconds) },
    };
  if (error instanceof WorkflowError)
    return { status: 400, body: { error: "InvalidWorkflow", message: describeError(error) }, headers: {} };
  if (error instanceof InputError)
    return { status: 400, body: { error: "InvalidRequest", message: describeError(error) }, headers: {} };
  if (error instanceof InfraError)
    return { status: 502, body: { error: "ClusterError", message: `${error.reason}: ${error.message}` }, headers: {} };
  if (error instanceof CancelledError)
    return {
      status: 503,
      body: { error: "ShuttingDown", message: error.message },
      headers: { "Retry-After": String(SHUTTING_DOWN_RETRY_AFTER_SECONDS) },
    };
  return {
    status: 500,
    body: { error: "InternalServerError", message: "internal error (see the service's log)" },
    headers: {},
  };
}

/**
 * The service log's line for a 5xx answer: a real 500 (a bug) with its stack; any other (501 no such method, 502
 * the cluster, 503 draining or a full disk) as what it is, on one line, without a stack.
 */
export function formatServerErrorLine(error: unknown): string {
  const { status, body } = mapErrorToHttp(error);
  if (status === 500)
    return `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
  return `answered ${status} ${body.error}: ${body.message.replace(/\s*\n\s*/g, " ")}`;
}
