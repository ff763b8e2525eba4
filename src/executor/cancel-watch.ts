// Watches the run's Job for a cancel requested through the cluster (`knotless-runner-k8s cancel`, from any host).
import { CancelledError, describeError } from "../errors.js";
import { buildWatchJobArgs, formatPermissions } from "../cluster/kubectl/kubectl-args.js";
import { classifyKubectlFailure, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import { readCancelRequest, type CancelRequest } from "../k8s/job-annotations.js";
import { JsonDocumentSplitter } from "../k8s/json-documents.js";
import { CANCEL_REQUESTED_ANNOTATION } from "../k8s/labels.js";
import { retry, type AttemptOutcome } from "../util/retry.js";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { ExecutorContext } from "./context.js";

/** A running watch; `stop` ends it (its kubectl killed) and resolves once it has ended. */
export interface CancelWatch {
  stop(): Promise<void>;
  /** Kills the watch's kubectl at once, without waiting (a runner about to exit). */
  stopNow(): void;
}

/** How one `kubectl get job --watch` ended. */
type WatchEnd =
  | { readonly kind: "cancel"; readonly request: CancelRequest }
  /** The Job was deleted (by gc, by hand): nothing more to watch; the run finds its pod gone on its own. */
  | { readonly kind: "deleted" }
  | { readonly kind: "ended"; readonly events: number; readonly exitCode: number; readonly stderr: string };

/** One document of the watch stream: `{type, object}`; anything else is ignored. */
function readWatchEvent(document: unknown): { readonly type: string; readonly job: IJob } | undefined {
  if (typeof document !== "object" || document === null) return undefined;
  const { type, object } = document as { type?: unknown; object?: unknown };
  if (typeof type !== "string" || typeof object !== "object" || object === null) return undefined;
  return { type, job: object as IJob };
}

/**
 * Streams the Job's changes (kubectl GETs it first, so a request made before the watch began is seen at once)
 * and calls `onCancel` when `knotless.dev/cancel-requested` appears, then stops. The watch is started again when
 * it ends (kubectl ends it cleanly every few minutes) or fails (cancelWatchRetry); a failure is a warning, once
 * until a watch works again. A credential that may not watch the Job ends it with a warning: cancel requests from
 * other processes then go unnoticed, the run itself goes on.
 */
export function startCancelWatch(ctx: ExecutorContext, onCancel: (request: CancelRequest) => void): CancelWatch {
  const { settings, emit } = ctx;
  const controller = new AbortController();
  let warned = false;
  const warn = (message: string): void => {
    if (warned) return;
    warned = true;
    emit({ kind: "notice", level: "warning", message: `cancel watch: ${message}` });
  };
  const done = retry(
    ctx.timings.cancelWatchRetry,
    { signal: controller.signal, giveUp: (reasons) => new Error(reasons.at(-1)) },
    async (): Promise<AttemptOutcome<undefined>> => {
      const end = await watchOnce(ctx, controller.signal);
      if (controller.signal.aborted) throw new CancelledError();
      if (end.kind === "cancel") {
        onCancel(end.request);
        return { done: true, value: undefined };
      }
      if (end.kind === "deleted") return { done: true, value: undefined };
      if (end.events > 0) warned = false; // it worked again
      if (end.exitCode === 0) return { done: false, reason: "the watch ended", progressed: end.events > 0 };
      const said = summarizeStderr(end.stderr);
      const kind = classifyKubectlFailure(end.stderr);
      if (kind === "not-found") return { done: true, value: undefined };
      if (kind === "forbidden" || kind === "unauthorized" || kind === "kubeconfig") {
        // kubectl before 1.33 prints a refused watch as `Forbidden: unknown (get jobs.batch)`: say what it needs.
        const needs = kind === "kubeconfig" ? "" : `; the watch needs ${formatPermissions(buildWatchJobArgs.permissions)}`;
        warn(`cannot watch Job ${settings.jobName} (${said}${needs}); a cancel requested with \`knotless-runner-k8s cancel\` will not reach this run`);
        return { done: true, value: undefined };
      }
      warn(`watching Job ${settings.jobName} for ${CANCEL_REQUESTED_ANNOTATION} failed (${said}); retrying`);
      return { done: false, reason: said, progressed: end.events > 0 };
    },
  ).catch((error: unknown) => {
    if (!(error instanceof CancelledError)) warn(`stopped: ${describeError(error)}`);
  });
  const stopNow = (): void => controller.abort();
  return {
    stopNow,
    stop: async () => {
      stopNow();
      await done;
    },
  };
}

/** One watch: reads the stream until a cancel request, the Job's deletion, or kubectl's exit. */
async function watchOnce(ctx: ExecutorContext, signal: AbortSignal): Promise<WatchEnd> {
  let process;
  try {
    process = ctx.kubectl.stream(buildWatchJobArgs(ctx.settings.target, ctx.settings.jobName), { signal });
  } catch (error) {
    return { kind: "ended", events: 0, exitCode: -1, stderr: describeError(error) };
  }
  const splitter = new JsonDocumentSplitter();
  let events = 0;
  let found: WatchEnd | undefined;
  let corrupt: string | undefined;
  process.stdout.setEncoding("utf8");
  process.stdout.on("data", (text: string) => {
    if (found || corrupt !== undefined) return;
    try {
      for (const document of splitter.push(text)) {
        const event = readWatchEvent(document);
        if (!event) continue;
        events += 1;
        const request = event.type === "DELETED" ? undefined : readCancelRequest(event.job);
        if (request) found = { kind: "cancel", request };
        else if (event.type === "DELETED") found = { kind: "deleted" };
        if (found) {
          process.kill();
          return;
        }
      }
    } catch (error) {
      corrupt = `kubectl printed something other than JSON: ${describeError(error)}`;
      process.kill();
    }
  });
  let exit;
  try {
    exit = await process.exited;
  } catch (error) {
    return { kind: "ended", events, exitCode: -1, stderr: describeError(error) };
  }
  if (found) return found;
  return { kind: "ended", events, exitCode: corrupt === undefined ? exit.exitCode : -1, stderr: corrupt ?? exit.stderr };
}
