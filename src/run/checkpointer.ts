// Writes a run's checkpoints: at every phase change (awaited, before the phase acts) and, rate-limited, as a step's output is logged.
import { describeError } from "../core/errors.js";
import type { LogFileProgress } from "../events/sinks.js";
import type { CheckpointStore, RunCheckpoint } from "./run-checkpoint.js";

/** At most one checkpoint a second while a step prints (SQLite and file writes stay cheap); every phase change has its own. */
export const CHECKPOINT_EVERY_MS = 1000;

export interface CheckpointerOptions {
  readonly store: CheckpointStore;
  /** run.log's and log.ndjson's places, in that order. */
  readonly logs: readonly [LogFileProgress, LogFileProgress];
  /** True while the secret mask holds back step output it has not passed on. */
  readonly maskHolding: () => boolean;
  /** The checkpoint as the run stands now, but for the step's offsets and the logs' lengths. */
  readonly snapshot: () => Omit<RunCheckpoint, "logs" | "step">;
  readonly everyMs?: number;
  /** Told of a checkpoint that could not be written: the run goes on (a restart continues from the one before). */
  readonly warn: (message: string) => void;
}

type StepPlace = NonNullable<RunCheckpoint["step"]>;

/**
 * Takes a checkpoint only where it is consistent: nothing of the step's relayed output is held back (by the decoder,
 * the mask or run.log's unfinished line), and saves it only once both log files hold the lengths it records, so a
 * restart that cuts them to those lengths and follows the step from its offsets loses nothing and repeats nothing.
 */
export class Checkpointer {
  readonly #options: CheckpointerOptions;
  readonly #everyMs: number;
  #step: StepPlace | null = null;
  /** The newest offsets told, and whether they were whole, for a trailing checkpoint. */
  #latest: { offsets: { stdout: number; stderr: number }; whole: boolean } | undefined;
  #taken = 0;
  #saved = 0;
  #lastAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: CheckpointerOptions) {
    this.#options = options;
    this.#everyMs = options.everyMs ?? CHECKPOINT_EVERY_MS;
  }

  /** A phase change (or a step about to start: `step` with null offsets): saved before the run goes on. */
  async mark(step: StepPlace | null = null): Promise<void> {
    this.#step = step;
    this.#latest = undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#take();
  }

  /** A step's output was emitted up to `offsets` (see ExecutorContext.onStepOutput). */
  stepOutput(index: number, offsets: { stdout: number; stderr: number }, whole: boolean): void {
    if (this.#stopped || this.#step?.index !== index) return;
    this.#latest = { offsets, whole };
    const wait = this.#lastAt + this.#everyMs - Date.now();
    if (wait <= 0) this.#takeStep();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#takeStep();
      }, wait);
      this.#timer.unref();
    }
  }

  /** No more checkpoints: the run is over (or its result is being written). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #takeStep(): void {
    const latest = this.#latest;
    const step = this.#step;
    if (!latest || !step || !latest.whole) return;
    this.#step = { ...step, offsets: latest.offsets };
    void this.#take();
  }

  async #take(): Promise<void> {
    if (this.#stopped) return;
    const [runLog, ndjson] = this.#options.logs;
    // Not consistent now: the next chance (the next output, the next phase) takes one.
    if (this.#options.maskHolding() || runLog.holding() || ndjson.holding()) return;
    const checkpoint: RunCheckpoint = {
      ...this.#options.snapshot(),
      step: this.#step,
      logs: { runLog: runLog.queuedLength(), ndjson: ndjson.queuedLength() },
    };
    const seq = ++this.#taken;
    this.#lastAt = Date.now();
    const written = await Promise.all([
      runLog.whenWritten(checkpoint.logs.runLog),
      ndjson.whenWritten(checkpoint.logs.ndjson),
    ]);
    // A newer one was saved meanwhile, or a log failed (the run stops on that itself).
    if (this.#stopped || seq <= this.#saved || written.includes(false)) return;
    this.#saved = seq;
    try {
      this.#options.store.save(checkpoint);
    } catch (error) {
      this.#options.warn(`could not write the run's checkpoint: ${describeError(error)}`);
    }
  }
}
