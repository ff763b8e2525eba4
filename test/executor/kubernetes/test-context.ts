// Builds an ExecutorContext around the kubectl transport over a scripted kubectl, with short timings and the emitted events recorded.
import type { RunEventInput } from "../../../src/events/run-events.js";
import {
  DEFAULT_TIMINGS,
  type ExecutorContext,
  type RunSettings,
  type ExecutorTimings,
} from "../../../src/executor/kubernetes/context.js";
import { exampleSettings } from "../../support/example-settings.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";
import type { RetryPolicy } from "../../../src/core/retry.js";

/** A default retry policy with its attempts and budget kept and its waits cut to milliseconds, so tests do not sleep through them. */
function shortenWaits<P extends Omit<RetryPolicy, "budgetMs">>(policy: P): P {
  return { ...policy, initialDelayMs: 2, maxDelayMs: 10 };
}

/** Fast enough for unit tests; a test that needs another value overrides it. */
export const UNIT_TIMINGS: ExecutorTimings = {
  ...DEFAULT_TIMINGS,
  imagePullGraceMs: 60_000,
  execReadyBudgetMs: 20_000,
  killGraceSeconds: 1,
  execLingerMs: 50,
  timedOutOutputMs: 2000,
  podPollMs: [5, 10],
  execReadyRetry: shortenWaits(DEFAULT_TIMINGS.execReadyRetry),
  createRetry: shortenWaits(DEFAULT_TIMINGS.createRetry),
  reconnectRetry: shortenWaits(DEFAULT_TIMINGS.reconnectRetry),
  killRetry: shortenWaits(DEFAULT_TIMINGS.killRetry),
  deleteRetry: shortenWaits(DEFAULT_TIMINGS.deleteRetry),
  podEndLagMs: 0,
};

export interface TestContext {
  readonly ctx: ExecutorContext;
  readonly kubectl: ScriptedKubectl;
  readonly events: RunEventInput[];
  readonly cancel: () => void;
  /** The recorded events of one kind. */
  readonly eventsOf: <K extends RunEventInput["kind"]>(kind: K) => Array<Extract<RunEventInput, { kind: K }>>;
}

export function buildTestContext(
  options: { timings?: Partial<ExecutorTimings>; settings?: Partial<RunSettings> } = {},
): TestContext {
  const kubectl = new ScriptedKubectl();
  const controller = new AbortController();
  const cleanup = new AbortController();
  const events: RunEventInput[] = [];
  const settings = { ...exampleSettings({ steps: ["build", "test"] }), ...options.settings };
  const ctx: ExecutorContext = {
    settings,
    timings: { ...UNIT_TIMINGS, ...options.timings },
    cluster: kubectl.cluster(settings.target),
    emit: (event) => events.push(event),
    signal: controller.signal,
    requestCancel: (reason) => controller.abort(reason),
    cleanupSignal: () => cleanup.signal,
  };
  const eventsOf = <K extends RunEventInput["kind"]>(kind: K) =>
    events.filter((e): e is Extract<RunEventInput, { kind: K }> => e.kind === kind);
  return { ctx, kubectl, events, cancel: () => controller.abort(), eventsOf };
}
