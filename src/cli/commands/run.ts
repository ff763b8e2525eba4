// `run`: runs one workflow run as one Job (or prints its plan with --dry-run) and maps the outcome to an exit code.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CancelledError, describeError } from "../../core/errors.js";
import { createEventEmitter } from "../../events/run-events.js";
import type { Executor, ExecutorCrashPath } from "../../executor/executor.js";
import type { RunResult } from "../../run/run-result.js";
import { SecretMasker } from "../../secrets/mask-stream.js";
import { removeSecretVariables } from "../../secrets/remove-secret-variables.js";
import { isDiskFullError, makeDiskFullError } from "../../core/disk-full.js";
import { makeDirectorySync } from "../../core/make-directory.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import { EXIT, exitCodeForError, exitCodeForResult } from "../exit-codes.js";
import {
  resolveResumeCommand,
  resolveRunCommand,
  type RawRunOptions,
  type RunCommand,
} from "../resolve-run-command.js";
import type { RunCheckpoint } from "../../run/run-checkpoint.js";
import { serializeRunPlan, type RunPlan } from "../../run/run-plan.js";
import { launchRun, openRunLogFiles } from "../../run/launch.js";
import { KubernetesExecutor } from "../../executor/kubernetes/kubernetes-executor.js";
import { createConsoleSink } from "../../events/sinks.js";
import { createStepTracker } from "../../run/step-tracker.js";
import { createOutputBudget } from "../../events/output-budget.js";
import { createCheckpointFile, removeResumeFiles, writePlanFile } from "../../run/resume-files.js";
import { prepareEmergencyExit } from "../emergency-exit.js";
import { renderDryRun } from "../dry-run.js";
import { writeNotMatchedResult } from "../not-matched.js";
import { RUN_OPTIONS } from "../run-options.js";
import { openCluster } from "../../cluster/transports/open-cluster.js";

/** How long a crashing runner blocks to delete its Job. */
const CRASH_DELETE_TIMEOUT_MS = 30_000;

export const runCommand: CommandSpec<RawRunOptions> = {
  name: "run",
  summary: "run the steps of one workflow run in one pod of one Job, then delete the Job",
  options: RUN_OPTIONS,
  execute: ({ options, ...io }) => executeRun(options, io),
};

/** Runs (or dry-runs) with options as parsed; returns the exit code. `env` is read here and nowhere below. */
export async function executeRun(options: RawRunOptions, io: CommandIo): Promise<number> {
  const { env, stdout, stderr } = io;
  if (options.resume !== undefined) {
    let resumed;
    try {
      resumed = await resolveResumeCommand(options, env);
    } catch (error) {
      stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
      return exitCodeForError(error);
    }
    return executeResolvedRun(resumed.config, io, resumed.resume);
  }
  let config;
  try {
    config = await resolveRunCommand(options, env);
  } catch (error) {
    stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
  for (const warning of config.warnings) stderr.write(`knotless-runner-k8s: warning: ${warning}\n`);
  if (config.dryRun) {
    stdout.write(await renderDryRun(config));
    return EXIT.success;
  }
  if (config.notMatched) {
    try {
      stderr.write(
        `knotless-runner-k8s: ${await writeNotMatchedResult({ ...config, notMatched: config.notMatched })}\n`,
      );
    } catch (error) {
      stderr.write(
        `knotless-runner-k8s: --out: cannot write the result into ${config.settings.outDir}: ${describeError(error)}\n`,
      );
      return EXIT.badInput;
    }
    return EXIT.success;
  }
  try {
    return await executeResolvedRun(config, io);
  } finally {
    if (config.emptyCheckout) rmSync(config.emptyCheckout, { recursive: true, force: true });
  }
}

/**
 * Runs a resolved, matching configuration for real; with `resume`, continues the run a killed `run` left in
 * settings.outDir instead (its logs cut to the checkpoint's lengths, its Job attached to).
 */
async function executeResolvedRun(
  config: RunCommand,
  { env, stdout, stderr }: CommandIo,
  resume?: { readonly plan: RunPlan; readonly checkpoint: RunCheckpoint },
): Promise<number> {
  // No child of the runner (kubectl, the host tar) needs what --secret-env read: a child's environment is readable
  // in /proc/PID/environ and handed on to everything it starts.
  const childEnv = removeSecretVariables(env, config.settings.secrets ?? []);
  const settings = config.settings.hostTar
    ? { ...config.settings, hostTar: { ...config.settings.hostTar, env: childEnv } }
    : config.settings;
  // Synchronous: one syscall, where an await would put a thread-pool round trip before the first kubectl call.
  try {
    makeDirectorySync(settings.outDir);
  } catch (error) {
    stderr.write(
      `knotless-runner-k8s: --out: cannot create the directory ${settings.outDir}: ${describeError(error)}\n`,
    );
    return EXIT.badInput;
  }
  // The plan (no secret value) before the Job exists: what `run --resume` continues a killed run from.
  if (!resume) {
    try {
      writePlanFile(settings.outDir, serializeRunPlan(settings));
    } catch (error) {
      stderr.write(`knotless-runner-k8s: --out: cannot write the run's plan: ${describeError(error)}\n`);
      return isDiskFullError(error) ? EXIT.infrastructure : EXIT.badInput;
    }
  }
  const controller = new AbortController();
  const force = new AbortController();
  // A full --out disk stops the run (failed, disk-full, exit 3) instead of running on with nothing recorded.
  const logFiles = openRunLogFiles(settings.outDir, { controller, force }, undefined, resume?.checkpoint.logs);
  const logs = [createConsoleSink(stdout, stderr, { clusterCalls: config.verbose }), ...logFiles];
  const stepTracker = createStepTracker(); // what a crash writes into result.json
  // The run's own, so that a crash can still report its counts; a resumed run's counts on from its checkpoint's.
  const outputBudget = createOutputBudget(settings.maxLogBytes, resume?.checkpoint.logCounts);
  const emit = createEventEmitter([...logs.map((log) => log.sink), stepTracker.sink]);
  for (const message of config.clamped) emit({ kind: "notice", level: "warning", message });
  const { cluster } = await openCluster(
    { target: settings.target, kubectlPath: config.kubectlPath, transport: config.transport },
    childEnv,
    {
      kubectl: (args) => emit({ kind: "kubectl", args }),
      api: (call) => emit({ kind: "api-call", ...call }),
    },
  );
  let executor: (Executor & ExecutorCrashPath) | undefined;
  const jobOf = (): RunResult["job"] => ({
    namespace: executor?.namespace ?? "",
    name: settings.jobName,
    pod: executor?.pod?.name ?? null,
    node: executor?.pod?.node || null,
    image: settings.image,
  });
  const lastWords = prepareEmergencyExit({
    outDir: settings.outDir,
    runId: settings.runId,
    logFiles,
    stepTracker,
    warn: (message) => stderr.write(`knotless-runner-k8s: ${message}\n`),
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      stderr.write(
        `\nknotless-runner-k8s: ${signal}: cancelling the run and deleting its Job (again to exit at once)\n`,
      );
      controller.abort(new CancelledError(`cancelled by ${signal}`));
      return;
    }
    const message = `exiting now; the Job may remain: ${cluster.formatDeleteJobCommand(executor?.namespace ?? settings.target.namespace, settings.jobName)}`;
    stderr.write(`knotless-runner-k8s: ${message}\n`);
    lastWords.log({ kind: "notice", level: "error", message: `${signal} again: ${message}` });
    executor?.removeStagedFilesSync();
    executor?.stopPresenceSync();
    lastWords.finish({
      status: "cancelled",
      error: { message: `cancelled by ${signal}, then ${signal} again: ${message}`, reason: "cancelled" },
      stepStatus: "cancelled",
      job: jobOf(),
      logs: outputBudget.counts(),
    });
    process.exit(EXIT.cancelled);
  };
  // A bug that escapes as an uncaught exception must not leave a paid node running until the pod's dead man's
  // switch fires: delete the Job synchronously (the event loop can no longer be trusted), then exit 3.
  const onCrash = (error: unknown): void => {
    // A bug's message could quote anything the run held: masked like every event.
    const masker = new SecretMasker((settings.secrets ?? []).map((secret) => secret.value));
    const detail = masker.maskText(error instanceof Error ? (error.stack ?? error.message) : String(error));
    stderr.write(`\nknotless-runner-k8s: internal error: ${detail}\n`);
    lastWords.log({ kind: "notice", level: "error", message: `internal error: ${detail}` });
    const { detail: teardown, mayBeLeft } = executor
      ? executor.teardownNowSync(CRASH_DELETE_TIMEOUT_MS)
      : { detail: "no Job was created", mayBeLeft: false };
    stderr.write(`knotless-runner-k8s: ${teardown}\n`);
    lastWords.log({ kind: "notice", level: mayBeLeft ? "error" : "info", message: teardown });
    lastWords.finish({
      status: "failed",
      error: { message: `internal error: ${masker.maskText(describeError(error))}; ${teardown}`, reason: "internal" },
      stepStatus: "failed",
      job: jobOf(),
      logs: outputBudget.counts(),
    });
    process.exit(EXIT.infrastructure);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  let finished: RunResult | undefined;
  try {
    const result = await launchRun({
      settings,
      cluster,
      controller,
      force,
      logs,
      sinks: [stepTracker.sink],
      outputBudget,
      timings: config.timings,
      createExecutor: (ctx) => (executor = new KubernetesExecutor(ctx)),
      checkpoints: createCheckpointFile(settings.outDir),
      ...(resume ? { resume: { checkpoint: resume.checkpoint, secretNames: resume.plan.secretNames } } : {}),
      onFinished: (ended) => (finished = ended),
      // A log that could not be written (no space left, say) does not change the run's verdict: it is reported.
      warn: (message) => stderr.write(`knotless-runner-k8s: warning: ${message}\n`),
    });
    removeResumeFiles(settings.outDir); // the result is written: nothing is left to resume
    stderr.write(`result: ${join(settings.outDir, "result.json")}\n`);
    return exitCodeForResult(result);
  } catch (error) {
    if (finished === undefined || !isDiskFullError(error)) throw error;
    stderr.write(
      `knotless-runner-k8s: the run ended ${finished.status}, but ${describeError(makeDiskFullError(error))}\n`,
    );
    return EXIT.infrastructure;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.off("uncaughtException", onCrash);
    process.off("unhandledRejection", onCrash);
  }
}
