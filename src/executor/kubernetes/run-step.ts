// Runs one step detached in the pod and follows its output, resuming from byte offsets when the stream drops.
import { StringDecoder } from "node:string_decoder";
import { CancelledError, InfraError, describeError } from "../../core/errors.js";
import { describeExecSaid, isExecSuccess, type ExecEnd } from "../../cluster/exec.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { runExec } from "../../cluster/run-exec.js";
import { FollowFrameParser, FollowProtocolError, type FollowFrame } from "../../pod/follow-frames.js";
import { helperCommand } from "../../pod/helper-script.js";
import { DEFAULT_MAX_LOG_BYTES } from "../../events/output-budget.js";
import { describeSpent, retry, type AttemptOutcome } from "../../core/retry.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod, StepOutcome } from "../executor.js";
import { isExecNotReady, withExecRetry } from "./exec-retry.js";
import { assertPodAlive, assertPodAliveAfterLag } from "./pod-alive.js";
import { describeStep } from "../../workflow/step-label.js";

/** How one follow exec ended. */
type FollowEnd =
  | { readonly kind: "final"; readonly frame: Extract<FollowFrame, { type: "exit" | "killed" | "not-started" }> }
  | { readonly kind: "cut"; readonly end: ExecEnd; readonly progressed: boolean }
  | { readonly kind: "deadline" };

/** Node's timers fire at once past 2^31-1 ms: budgets are capped there (24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/** `from`: the step was started by a runner that stopped; follow it from these offsets instead of starting it. */
export async function runStep(
  ctx: ExecutorContext,
  pod: RunPod,
  index: number,
  deadlineAt: number,
  from?: { readonly stdout: number; readonly stderr: number },
): Promise<StepOutcome> {
  const offsets = { stdout: from?.stdout ?? 0, stderr: from?.stderr ?? 0 };
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), Math.min(MAX_TIMER_MS, Math.max(0, deadlineAt - Date.now())));
  let started = from !== undefined;
  const owed = { stdout: 0, stderr: 0 };
  const onData = (stream: "stdout" | "stderr", data: Buffer): void => {
    offsets[stream] += data.length;
    owed[stream] = countUnfinishedUtf8(data, owed[stream]);
    const text = decoders[stream].write(data);
    if (text) ctx.emit({ kind: "step-output", index, stream, text });
    ctx.onStepOutput?.(index, { ...offsets }, owed.stdout === 0 && owed.stderr === 0);
  };
  const droppedSaid = new Set<"stdout" | "stderr">(); // a reconnecting follow says it again
  const onDropped = (frame: Extract<FollowFrame, { type: "dropped" }>): void => {
    if (droppedSaid.has(frame.stream)) return;
    droppedSaid.add(frame.stream);
    const counted = frame.bytes === undefined ? {} : { podDroppedBytes: frame.bytes };
    ctx.emit({
      kind: "notice",
      level: "warning",
      message: describePodDrop(
        index,
        frame,
        ctx.settings.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES,
        ctx.settings.steps[index]?.name,
      ),
      ...counted,
    });
  };
  let spawned = false;
  try {
    const outcome = await retry(
      ctx.timings.reconnectRetry,
      {
        signal: ctx.signal,
        onRetry: (n, reason, delayMs) =>
          ctx.emit({
            kind: "notice",
            level: "warning",
            message: `${labelStep(ctx, index)}: the exec stream ended without the step's exit code (${reason}); reconnecting at byte ${offsets.stdout}/${offsets.stderr} in ${delayMs} ms (attempt ${n + 1})`,
          }),
        giveUp: (reasons, spent) =>
          new InfraError(
            "exec-no-exit-code",
            `${labelStep(ctx, index)}: the exec kept ending without the step's exit code (${describeSpent(spent)}); last: ${reasons.at(-1)}`,
          ),
      },
      async (): Promise<AttemptOutcome<StepOutcome>> => {
        const command = started
          ? helperCommand.follow(index, offsets.stdout, offsets.stderr)
          : helperCommand.run(index);
        spawned = true;
        const end = await followOnce(ctx, pod, command, deadline.signal, onData, onDropped);
        if (ctx.signal.aborted) throw new CancelledError();
        if (end.kind === "deadline") {
          await stopStepProcesses(ctx, pod, index, "timed out");
          await readTimedOutOutput(ctx, pod, index, offsets, onData, onDropped);
          return { done: true, value: { status: "timeout", exitCode: null, timedOut: true } };
        }
        if (end.kind === "final") {
          if (end.frame.type === "exit") {
            const exitCode = end.frame.code;
            return { done: true, value: { status: exitCode === 0 ? "success" : "failed", exitCode, timedOut: false } };
          }
          if (end.frame.type === "not-started") {
            started = false;
            return { done: false, reason: "the step had not started yet" };
          }
          throw new InfraError("exec-failed", `${labelStep(ctx, index)} was killed in the pod by someone else`);
        }
        const denied = end.end.kind === "failed" ? describeRefusal(end.end.error, labelStep(ctx, index)) : undefined;
        if (denied) throw denied;
        if (isExecNotReady(end.end)) return { done: false, reason: describeExecSaid(end.end) };
        started = true;
        await assertPodAlive(ctx, pod);
        return { done: false, reason: `${end.end.how}: ${describeExecSaid(end.end)}`, progressed: end.progressed };
      },
    );
    flushDecoders(ctx, index, decoders);
    return outcome;
  } catch (error) {
    // Cancelled while the step may run in the pod: its processes are stopped as on a timeout, within the clean-up's
    // bound, so that /outputs can be collected from a step that no longer writes; deleting the Job stops them anyway.
    if (ctx.signal.aborted && spawned) {
      flushDecoders(ctx, index, decoders);
      await stopCancelledStep(ctx, pod, index);
    }
    // Follows that kept ending may be a pod that ended (evicted) whose status still says Running: look at it for
    // podEndLagMs before blaming the exec, as a failed exec does (under load an eviction was reported this way).
    if (error instanceof InfraError && error.reason === "exec-no-exit-code") await assertPodAliveAfterLag(ctx, pod);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How many bytes the stream still owes to finish its last UTF-8 character, after `data`, when it owed `owed` before:
 * 0 when the decoder holds nothing back.
 */
export function countUnfinishedUtf8(data: Buffer, owed: number): number {
  const at = Math.min(owed, data.length);
  owed -= at;
  if (owed > 0 || at >= data.length) return owed;
  // The last lead byte within the last 4 bytes says how long its character is.
  for (let back = 1; back <= 4 && data.length - back >= at; back += 1) {
    const byte = data[data.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return back < need ? need - back : 0;
  }
  return 0;
}

/** The log's line for output the pod dropped past its bound (src/pod/helper-script.ts's `keep`). */
export function describePodDrop(
  index: number,
  frame: { readonly stream: "stdout" | "stderr"; readonly bytes: number | undefined },
  boundBytes: number,
  stepName?: string,
): string {
  const what =
    frame.bytes === undefined
      ? "the rest of it was dropped in the pod (uncounted: the step was stopped first)"
      : `${frame.bytes} more bytes were dropped in the pod`;
  return (
    `${describeStep(index, stepName)}'s ${frame.stream} passed the pod's output bound of ${boundBytes} bytes (--max-log-bytes): ${what}, ` +
    "written to no file and no log (the step went on running); result.json's logs.droppedBytes counts them"
  );
}

/** Stops a cancelled step's processes under the clean-up signal; a failure is a warning (teardown deletes the pod). */
async function stopCancelledStep(ctx: ExecutorContext, pod: RunPod, index: number): Promise<void> {
  const cleanup: ExecutorContext = { ...ctx, signal: ctx.cleanupSignal() };
  try {
    await stopStepProcesses(cleanup, pod, index, "was cancelled");
    ctx.emit({
      kind: "notice",
      level: "info",
      message: `${labelStep(ctx, index)}: its processes in the pod are stopped`,
    });
  } catch (error) {
    ctx.emit({
      kind: "notice",
      level: "warning",
      message: `${labelStep(ctx, index)}: its processes in the pod could not be confirmed stopped after the cancel (${describeError(error)}); deleting the Job stops them`,
    });
  }
}

/** One exec of `run` or `follow`: streams frames until the final one, the stream's end, or the deadline. */
async function followOnce(
  ctx: ExecutorContext,
  pod: RunPod,
  command: readonly string[],
  deadline: AbortSignal,
  onData: (stream: "stdout" | "stderr", data: Buffer) => void,
  onDropped: (frame: Extract<FollowFrame, { type: "dropped" }>) => void,
): Promise<FollowEnd> {
  if (deadline.aborted) return { kind: "deadline" };
  // stdin is held open and never written: its end is how the pod learns that this runner stopped following.
  const exec = await ctx.cluster.exec({ ...buildPodExec(ctx, pod.name, command), stdin: { kind: "pipe" } });
  exec.stdin?.on("error", () => {}); // the exec may end without reading it: its end says why
  const parser = new FollowFrameParser();
  let final: FollowEnd | undefined;
  let progressed = false;
  let protocolError: FollowProtocolError | undefined;
  const onDeadline = (): void => exec.kill();
  deadline.addEventListener("abort", onDeadline, { once: true });
  exec.stdout.on("data", (chunk: Buffer) => {
    if (final || protocolError) return;
    try {
      for (const frame of parser.push(chunk)) {
        if (frame.type === "stdout" || frame.type === "stderr") {
          progressed = true;
          onData(frame.type, frame.data);
        } else if (frame.type === "dropped") {
          onDropped(frame);
        } else if (frame.type !== "heartbeat") {
          final = { kind: "final", frame };
          setTimeout(() => exec.kill(), ctx.timings.execLingerMs).unref();
        }
      }
    } catch (error) {
      protocolError = error as FollowProtocolError;
      exec.kill();
    }
  });
  const end = await exec.ended;
  exec.stdin?.destroy();
  deadline.removeEventListener("abort", onDeadline);
  if (final) return final;
  if (protocolError)
    throw new InfraError("exec-failed", `the step's output stream is corrupt: ${protocolError.message}`);
  if (deadline.aborted) return { kind: "deadline" };
  return { kind: "cut", end, progressed };
}

/**
 * Terminates every process of the step in the pod (TERM, then KILL after the grace), on a timeout or a cancel. Done
 * only when the pod says `stopped N`: a kill exec that ends without that line (dropped, swallowed) is run again (it
 * is idempotent), and a step that cannot be confirmed stopped is an infrastructure failure, never a quiet timeout.
 */
async function stopStepProcesses(
  ctx: ExecutorContext,
  pod: RunPod,
  index: number,
  why: "timed out" | "was cancelled",
): Promise<void> {
  const grace = ctx.timings.killGraceSeconds;
  const confirmation = helperCommand.killConfirmation(index);
  await retry(
    ctx.timings.killRetry,
    {
      signal: ctx.signal,
      onRetry: (n, reason, delayMs) =>
        ctx.emit({
          kind: "notice",
          level: "warning",
          message: `${labelStep(ctx, index)}: the kill in the pod was not confirmed (${reason}); again in ${delayMs} ms (attempt ${n + 1})`,
        }),
      giveUp: (reasons, spent) =>
        new InfraError(
          "exec-failed",
          `${labelStep(ctx, index)} ${why} and its processes in the pod could not be confirmed stopped (${describeSpent(spent)}): ${reasons.at(-1)}`,
        ),
    },
    async (): Promise<AttemptOutcome<undefined>> => {
      const said = await withExecRetry(ctx, pod, `stopping ${labelStep(ctx, index)}`, "exec-failed", async () => {
        const { end, stdout } = await runExec(
          ctx.cluster,
          buildPodExec(ctx, pod.name, helperCommand.kill(index, grace)),
        );
        return isExecSuccess(end) ? { ok: true, value: stdout } : { ok: false, end };
      });
      if (said.split("\n").includes(confirmation)) return { done: true, value: undefined };
      return {
        done: false,
        reason:
          said.trim() === ""
            ? "the kill exec ended without a word from the pod"
            : `the pod said: ${said.trim().slice(0, 200)}`,
      };
    },
  );
}

/**
 * Reads what a stopped step wrote that its killed stream had not relayed: one follow from the offsets the runner has,
 * which the helper answers with the rest and `K`. Bounded by timedOutOutputMs; a failure is a warning, since the
 * step's outcome, a timeout, is already known.
 */
async function readTimedOutOutput(
  ctx: ExecutorContext,
  pod: RunPod,
  index: number,
  offsets: { readonly stdout: number; readonly stderr: number },
  onData: (stream: "stdout" | "stderr", data: Buffer) => void,
  onDropped: (frame: Extract<FollowFrame, { type: "dropped" }>) => void,
): Promise<void> {
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort(), ctx.timings.timedOutOutputMs);
  let why: string | undefined;
  try {
    const end = await followOnce(
      ctx,
      pod,
      helperCommand.follow(index, offsets.stdout, offsets.stderr),
      bound.signal,
      onData,
      onDropped,
    );
    if (end.kind === "deadline") why = `no end after ${ctx.timings.timedOutOutputMs} ms`;
    else if (end.kind === "cut") why = `${end.end.how}: ${describeExecSaid(end.end)}`;
  } catch (error) {
    why = describeError(error);
  } finally {
    clearTimeout(timer);
  }
  // A cancel meanwhile ended the read: the run says so, not this warning.
  if (why === undefined || ctx.signal.aborted) return;
  ctx.emit({
    kind: "notice",
    level: "warning",
    message: `${labelStep(ctx, index)}: the output it wrote after byte ${offsets.stdout}/${offsets.stderr} before its timeout could not be read (${why})`,
  });
}

function flushDecoders(
  ctx: ExecutorContext,
  index: number,
  decoders: Record<"stdout" | "stderr", StringDecoder>,
): void {
  for (const stream of ["stdout", "stderr"] as const) {
    const rest = decoders[stream].end();
    if (rest) ctx.emit({ kind: "step-output", index, stream, text: rest });
  }
}

/** The step as every message names it: `step 1 (build)`, numbered as the run's log numbers steps. */
function labelStep(ctx: Pick<ExecutorContext, "settings">, index: number): string {
  return describeStep(index, ctx.settings.steps[index]?.name);
}
