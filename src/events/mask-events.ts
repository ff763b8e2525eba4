// Masks the run's secrets in every event before any sink sees it: step output as streams, everything else whole.
import type { SecretMasker, MaskStream } from "../secrets/mask-stream.js";
import type { RunEvent, RunEventSink } from "./run-events.js";

/**
 * The first transform of the event chain (`mask.through(budget.through(sinks))`), so that the console, run.log,
 * log.ndjson, the step tracker of a crashing CLI and an embedder's sinks never see a secret. Step output goes
 * through one MaskStream per step and stream: it passes on at once what cannot start a secret and holds back only
 * a tail that could, until more output decides it; the tail is released (masked) just before the step's
 * `step-end`, or at `run-end` for a step that never ended. Every string of every other event (notices, errors,
 * phase details, commands) is masked whole. With no secrets the chain is `next` itself.
 */
export function createEventMask(source: SecretMasker | (() => SecretMasker)): {
  through(next: RunEventSink): RunEventSink;
  /** True while a stream holds back text it has not passed on (what could start a secret). */
  holding(): boolean;
} {
  // A function: the masker of a run that re-attached is known only once its secrets are read back from the pod.
  const current = typeof source === "function" ? source : () => source;
  const streams = new Map<string, MaskStream>();
  return {
    holding: () => [...streams.values()].some((stream) => stream.heldLength > 0),
    through(next) {
      if (typeof source !== "function" && source.isEmpty) return next;
      const release = (time: string, index: number | undefined): void => {
        for (const [key, stream] of streams) {
          const [step, name] = key.split("/") as [string, "stdout" | "stderr"];
          if (index !== undefined && Number(step) !== index) continue;
          streams.delete(key);
          const rest = stream.end();
          if (rest !== "") next({ time, kind: "step-output", index: Number(step), stream: name, text: rest });
        }
      };
      return (event: RunEvent) => {
        if (event.kind === "step-output") {
          const key = `${event.index}/${event.stream}`;
          let stream = streams.get(key);
          if (!stream) streams.set(key, (stream = current().createStream()));
          const text = stream.write(event.text);
          if (text !== "") next({ ...event, text });
          return;
        }
        if (event.kind === "step-end") release(event.time, event.index);
        if (event.kind === "run-end") release(event.time, undefined);
        next(maskStrings(event, current()));
      };
    },
  };
}

/** A copy of `value` with every string in it masked (objects and arrays walked; the event shapes are small). */
export function maskStrings<T>(value: T, masker: SecretMasker): T {
  if (typeof value === "string") return masker.maskText(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => maskStrings(item, masker)) as T;
  if (value !== null && typeof value === "object") {
    const masked: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value))
      masked[key] = key === "time" || key === "kind" ? item : maskStrings(item, masker);
    return masked as T;
  }
  return value;
}
