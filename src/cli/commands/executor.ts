// `executor`: a remote executor of Tangled's spindle mill; dials the mill, runs the workflows it places as Jobs, until SIGTERM drains it.
import { join } from "node:path";
import { describeError } from "../../core/errors.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import { EXIT, exitCodeForError } from "../exit-codes.js";
import { EXECUTOR_OPTIONS, resolveExecutorCommand, type RawExecutorOptions } from "../executor-options.js";
import { createClusterClient } from "../../serve/cluster-transport.js";
import { loadMillCodec } from "../../mill/mill-codec.js";
import { MillState } from "../../mill/mill-state.js";
import { openLogStore } from "../../mill/open-log-store.js";
import { createKubernetesLauncher } from "../../mill/launch-lease.js";
import { MillSession } from "../../mill/mill-session.js";
import { createMillMetrics, listenMetrics } from "../../mill/mill-metrics.js";

export const executorCommand: CommandSpec<RawExecutorOptions> = {
  name: "executor",
  summary:
    "run the workflows a Tangled spindle mill places on this executor (spindle.mill.v1 over one WebSocket), each as one Job",
  options: EXECUTOR_OPTIONS,
  execute: ({ options, ...io }) => executeExecutor(options, io),
};

/** Starts the executor; resolves with the exit code once SIGTERM (or SIGINT) has drained it. `env` is read here and nowhere below. */
export async function executeExecutor(
  options: RawExecutorOptions,
  { env, stdout, stderr }: CommandIo,
): Promise<number> {
  const warn = (message: string): void => void stderr.write(`knotless-runner-k8s: ${message}\n`);
  let session: MillSession;
  let closeAll: () => Promise<void>;
  let drainTimeoutMs: number;
  try {
    const config = await resolveExecutorCommand(options, env);
    drainTimeoutMs = config.drainTimeoutMs;
    const [cluster, codec, logStore] = await Promise.all([
      createClusterClient(config.transport),
      loadMillCodec(),
      openLogStore(config.logStore),
    ]);
    const state = new MillState(config.stateDir, { codec, outboxCapBytes: config.outboxMaxBytes });
    const launcher = createKubernetesLauncher({
      cluster,
      defaults: config.defaults,
      runsDir: join(config.stateDir, "runs"),
      ...(config.architectures ? { architectures: config.architectures } : {}),
      warn,
    });
    const metrics = await createMillMetrics(() => session?.stats());
    const metricsServer = config.metricsListen
      ? await listenMetrics(metrics, config.metricsListen.host, config.metricsListen.port)
      : undefined;
    session = new MillSession({
      url: config.millUrl,
      token: config.token,
      labels: config.labels,
      arch: config.arch,
      maxRuns: config.maxRuns,
      state,
      codec,
      launcher,
      logStore,
      logDir: join(config.stateDir, "logs"),
      ...(config.timings ? { timings: config.timings } : {}),
      ...(config.millCa !== undefined ? { socketOptions: { ca: config.millCa } } : {}),
      warn,
      observer: metrics.observer,
    });
    closeAll = async () => {
      await session.stop();
      await metricsServer?.close();
      state.close();
    };
    session.start();
    stdout.write(
      `executor epoch ${state.epoch}: dialling ${config.millUrl}; logs to ${logStore.describe}${metricsServer ? `; metrics at ${metricsServer.url}` : ""}\n`,
    );
  } catch (error) {
    warn(describeError(error));
    return exitCodeForError(error);
  }
  // A bug that escapes: exit at once; the next start re-attaches to the runs it left (or reports them runner-lost).
  const onCrash = (error: unknown): void => {
    warn(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(EXIT.infrastructure);
  };
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      if (signals === 1) {
        warn(
          `${signal}: draining: new reservations refused; running leases have ${Math.round(drainTimeoutMs / 1000)}s to finish, then they are cancelled (${signal} again to cancel them now)`,
        );
        void session.drain(drainTimeoutMs).then(resolve, (error: unknown) => {
          warn(`draining: ${describeError(error)}`);
          resolve();
        });
        return;
      }
      warn(`${signal} again: cancelling every running lease now`);
      void session.drain(0).then(resolve, () => resolve());
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  await closeAll();
  warn("stopped: every lease's terminal is queued");
  return EXIT.success;
}
