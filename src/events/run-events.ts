// The run's typed event stream: every log, the console and an embedding daemon read these and nothing else.

export type StepStatus = "success" | "failed" | "timeout" | "cancelled" | "skipped";
export type RunStatus = "success" | "failed" | "timeout" | "cancelled";
export type Phase = "scan" | "create" | "pod" | "services" | "upload" | "clone" | "secrets" | "download" | "teardown";

interface Base {
  /** ISO 8601 time the event happened. */
  readonly time: string;
}

export type RunEvent =
  /** `namespace` is absent when it is the kubeconfig context's: kubectl picks it on create (phase-end create names it). */
  | (Base & {
      readonly kind: "run-start";
      readonly runId: string;
      readonly jobName: string;
      readonly namespace?: string;
      readonly image: string;
      readonly steps: readonly string[];
    })
  /** One call to the cluster: a kubectl process (its arguments), or one request of the API transport (never a header or body). */
  | (Base & { readonly kind: "kubectl"; readonly args: readonly string[] })
  | (Base & {
      readonly kind: "api-call";
      readonly method: string;
      readonly path: string;
      readonly status: number | null;
      readonly durationMs: number;
    })
  | (Base & { readonly kind: "phase-start"; readonly phase: Phase })
  /** `bytes`: what the phase moved between the host and the pod, when it moves any and succeeded (the upload's archive). */
  | (Base & {
      readonly kind: "phase-end";
      readonly phase: Phase;
      readonly ok: boolean;
      readonly durationMs: number;
      readonly detail: string;
      readonly bytes?: number;
    })
  | (Base & {
      readonly kind: "pod-progress";
      readonly elapsedMs: number;
      readonly phase: string;
      readonly reason?: string;
      readonly message?: string;
      readonly event?: string;
    })
  | (Base & { readonly kind: "pod-ready"; readonly pod: string; readonly node: string; readonly waitedMs: number })
  | (Base & { readonly kind: "step-start"; readonly index: number; readonly name: string; readonly command: string })
  | (Base & {
      readonly kind: "step-output";
      readonly index: number;
      readonly stream: "stdout" | "stderr";
      readonly text: string;
    })
  | (Base & {
      readonly kind: "step-end";
      readonly index: number;
      readonly name: string;
      readonly status: StepStatus;
      readonly exitCode: number | null;
      readonly durationMs: number;
      readonly timedOut: boolean;
    })
  | (Base & {
      readonly kind: "notice";
      readonly level: "info" | "warning" | "error";
      readonly message: string;
      /** Step output the pod dropped past its bound, which the run's log counts (OutputBudget) as it counts its own drops. */
      readonly podDroppedBytes?: number;
    })
  /** A service's last log lines (bounded; masked like step output): when it failed to become ready, and at the run's end. */
  | (Base & {
      readonly kind: "service-log";
      readonly service: string;
      readonly when: "not-ready" | "end";
      readonly text: string;
    })
  /** One cache restored before the first step: `restoredKey` on a hit; `reason` when it failed (a warning, never the run's verdict). */
  | (Base & {
      readonly kind: "cache-restore";
      readonly key: string;
      readonly status: "exact" | "fallback" | "miss" | "failed";
      readonly restoredKey?: string;
      readonly bytes: number;
      readonly durationMs: number;
      readonly reason?: string;
    })
  /** One cache after the run: saved, already saved by another run, skipped (why in `reason`) or failed (a warning). */
  | (Base & {
      readonly kind: "cache-save";
      readonly key: string;
      readonly status: "saved" | "exists" | "skipped" | "failed";
      readonly bytes: number;
      readonly durationMs: number;
      readonly reason?: string;
    })
  /** One artifact after the run: its files are in `<out>/artifacts/<name>/`, listed in its manifest. */
  | (Base & {
      readonly kind: "artifact";
      readonly name: string;
      readonly status: "collected" | "empty" | "skipped" | "failed";
      readonly files: number;
      readonly bytes: number;
      readonly durationMs: number;
      readonly required: boolean;
      readonly reason?: string;
    })
  | (Base & {
      readonly kind: "run-end";
      readonly status: RunStatus;
      readonly exitCode: number;
      readonly error?: string;
      readonly durationMs: number;
    });

export type RunEventKind = RunEvent["kind"];

/** A call to the cluster (either transport's): run.log records them, the console only with --verbose. */
export function isClusterCall(event: RunEvent): event is Extract<RunEvent, { kind: "kubectl" | "api-call" }> {
  return event.kind === "kubectl" || event.kind === "api-call";
}

/** Distributes the definition of an event without its time: `Omit` on a union would collapse it. */
type WithoutTime<E> = E extends RunEvent ? Omit<E, "time"> : never;
export type RunEventInput = WithoutTime<RunEvent>;

/** Where events go. Sinks must not throw; a slow sink slows the run, so they write asynchronously. */
export type RunEventSink = (event: RunEvent) => void;

/** Fans one event out to every sink, stamping the time once. */
export function createEventEmitter(
  sinks: readonly RunEventSink[],
  now: () => Date = () => new Date(),
): (event: RunEventInput) => void {
  return (input) => {
    const event = { ...input, time: now().toISOString() } as RunEvent;
    for (const sink of sinks) sink(event);
  };
}
