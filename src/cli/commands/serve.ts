// `serve`: the runner as a service that holds many runs at once, driven over XRPC; runs until SIGTERM, then drains.
import { CancelledError, describeError } from "../../core/errors.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import { EXIT, exitCodeForError } from "../exit-codes.js";
import { SERVE_OPTIONS, resolveServeCommand, type RawServeOptions } from "../serve-options.js";
import { startService } from "../../serve/start-service.js";

/** How long a crashing service blocks to delete each running run's Job. */
const CRASH_DELETE_TIMEOUT_MS = 30_000;
/** How long a second SIGTERM blocks to delete each running run's Job before exiting. */
const SECOND_SIGNAL_DELETE_TIMEOUT_MS = 5_000;

export const serveCommand: CommandSpec<RawServeOptions> = {
  name: "serve",
  summary:
    "run as a service: many runs at once, submitted, followed and cancelled over XRPC (/xrpc/dev.knotless.runner.*)",
  options: SERVE_OPTIONS,
  execute: ({ options, ...io }) => executeServe(options, io),
};

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/** Starts the service; resolves with the exit code once SIGTERM (or SIGINT) has drained it. `env` is read here and nowhere below. */
export async function executeServe(options: RawServeOptions, { env, stdout, stderr }: CommandIo): Promise<number> {
  const warn = (message: string): void => void stderr.write(`knotless-runner-k8s: ${message}\n`);
  let started: Awaited<ReturnType<typeof startService>>;
  let drainTimeoutMs: number;
  let drainCleanupTimeoutMs: number;
  try {
    const config = await resolveServeCommand(options, env);
    drainTimeoutMs = config.drainTimeoutMs;
    drainCleanupTimeoutMs = config.drainCleanupTimeoutMs;
    started = await startService(config, { warn });
  } catch (error) {
    warn(describeError(error));
    return exitCodeForError(error);
  }
  // A bug that escapes must not leave paid nodes running: delete every running run's Job synchronously, then exit 3.
  const onCrash = (error: unknown): void => {
    warn(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    for (const detail of started.service.teardownAllNowSync(CRASH_DELETE_TIMEOUT_MS)) warn(detail);
    process.exit(EXIT.infrastructure);
  };
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  const now = new AbortController();
  // An abandoned run's calls, timers and kubectl children would keep the process alive until they time out: once the
  // drain has said what it abandoned (stderr is written synchronously to a file or pipe), exit. A clean drain leaves
  // nothing running, so it ends as any process does.
  const exitNow = (code: number): never => process.exit(code);
  let signals = 0;
  const stopped = new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      if (signals === 1) {
        warn(
          `${signal}: draining: no new runs; running runs have ${formatSeconds(drainTimeoutMs)} to finish, then they are cancelled and have ${formatSeconds(drainCleanupTimeoutMs)} to delete their Jobs (${signal} again to exit at once)`,
        );
        void started.stop(drainTimeoutMs, now.signal, drainCleanupTimeoutMs).then(
          (abandoned) => {
            for (const run of abandoned)
              warn(
                `gave up waiting for run ${run.runId} after ${formatSeconds(drainCleanupTimeoutMs)} of clean-up: ${run.detail}${run.mayBeLeft ? " (its Job may be left: gc deletes it once its heartbeat is stale)" : ""}`,
              );
            if (abandoned.length === 0) {
              warn("stopped: every run is over and its Job deleted");
              resolve(EXIT.success);
            } else exitNow(EXIT.infrastructure);
          },
          (error: unknown) => {
            warn(`stopping: ${describeError(error)}`);
            exitNow(EXIT.infrastructure);
          },
        );
        return;
      }
      // The operator asked twice: no more waiting, only each Job deleted synchronously (ms each) and named.
      now.abort(new CancelledError(`cancelled by ${signal}`));
      const abandoned = started.service.abandonAllNowSync(
        `${signal} twice: the service exited at once`,
        SECOND_SIGNAL_DELETE_TIMEOUT_MS,
      );
      for (const run of abandoned)
        warn(
          `${signal} again: abandoned run ${run.runId}: ${run.detail}${run.mayBeLeft ? " (its Job may be left: gc deletes it once its heartbeat is stale)" : ""}`,
        );
      warn(`${signal} again: exiting now${abandoned.length === 0 ? "" : ` with ${abandoned.length} run(s) abandoned`}`);
      process.exit(EXIT.cancelled);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  stdout.write(`listening on ${started.url}\n`);
  return await stopped;
}
