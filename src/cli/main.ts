// The command line: parses flags, resolves the typed config once, runs (or dry-runs) and maps the outcome to an exit code.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Command, CommanderError, Option } from "commander";
import { CancelledError, describeError } from "../errors.js";
import { createEventEmitter } from "../events/run-events.js";
import { formatCommand } from "../events/format-event.js";
import { buildDeleteJobArgs } from "../k8s/kubectl-args.js";
import { EXIT, exitCodeForError, exitCodeForResult } from "./exit-codes.js";
import { resolveRunConfig, type RawRunOptions } from "./resolve-config.js";

const EXIT_CODES_HELP = `
Exit codes:
  0    the run succeeded
  1    a step failed or timed out
  2    bad input (nothing was touched in the cluster)
  3    infrastructure failure (cluster unreachable, pod never ready, image pull, pod lost, exec without exit code, integrity)
  130  cancelled (SIGINT/SIGTERM); the Job is deleted`;

function buildProgram(run: (options: RawRunOptions) => Promise<number>): Command {
  const program = new Command("knotless-runner-k8s")
    .description("Runs one knotless workflow run as one Kubernetes batch/v1 Job, through kubectl.")
    .exitOverride()
    .showHelpAfterError(false)
    .addHelpText("after", EXIT_CODES_HELP);
  program
    .command("run")
    .description("run the steps of one workflow run in one pod of one Job, then delete the Job")
    .requiredOption("--checkout <dir>", "the checkout, streamed into /work")
    .requiredOption("--steps <file>", "steps file: one `name<TAB>script` per line; blank and # lines ignored")
    .requiredOption("--out <dir>", "where result.json, run.log, log.ndjson and outputs/ are written")
    .option("--shared-steps <dir>", "a directory streamed into /steps")
    .option("--image <ref>", "the container image of the run", "busybox:1.36")
    .option("--namespace <ns>", "namespace (default: the kubeconfig context's, else default)")
    .option("--kubeconfig <file>", "kubeconfig file (default: kubectl's own rules)")
    .option("--context <name>", "kubeconfig context")
    .option("--kubectl <path>", "kubectl binary (default: $KNOTLESS_KUBECTL, else kubectl on PATH)")
    .option("--run-id <id>", "the run's id; the Job is knotless-run-<id> (default: generated)")
    .option("--timeout <duration>", "budget of the whole run, e.g. 90s, 10m, 1h", "1h")
    .option("--step-timeout <duration>", "budget of each step (default: the rest of the run's)")
    .option("--pod-timeout <duration>", "how long the pod may stay Pending", "15m")
    .option("--cpu <quantity>", "CPU request of the pod", "500m")
    .option("--memory <quantity>", "memory request and limit of the pod", "512Mi")
    .option("--max-output-bytes <size>", "most bytes taken back from /outputs", "512Mi")
    .option("--keep", "leave the Job in the cluster and print the command that deletes it")
    .option("--dry-run", "validate, then print the Job manifest and every kubectl call; touch nothing")
    .addOption(new Option("--verbose", "also print every kubectl call on the console"))
    .addHelpText("after", EXIT_CODES_HELP)
    .action(async (options: RawRunOptions) => {
      process.exitCode = await run(options);
    });
  return program;
}

/** Runs the CLI; returns the exit code. `env` is read here and nowhere below. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let code: number = EXIT.success;
  const program = buildProgram(async (options) => (code = await runCommand(options, env)));
  program.configureOutput({ writeErr: (text) => process.stderr.write(text) });
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.badInput;
    }
    await program.parseAsync([...argv], { from: "user" });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return EXIT.success;
      return EXIT.badInput;
    }
    process.stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}

async function runCommand(options: RawRunOptions, env: NodeJS.ProcessEnv): Promise<number> {
  let config;
  try {
    config = await resolveRunConfig(options, env);
  } catch (error) {
    process.stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
  if (config.dryRun) {
    const { renderDryRun } = await import("./dry-run.js");
    process.stdout.write(await renderDryRun(config));
    return EXIT.success;
  }
  // Loaded only for real runs, so --help, bad input and dry runs start fast.
  const [{ runWorkflow }, { Kubectl }, { createConsoleSink, createHumanLogSink, createNdjsonLogSink }] = await Promise.all([
    import("../run/run-workflow.js"),
    import("../k8s/kubectl.js"),
    import("../events/sinks.js"),
  ]);
  const { settings } = config;
  await mkdir(settings.outDir, { recursive: true });
  const logs = [
    createConsoleSink(process.stdout, process.stderr, { kubectlCalls: config.verbose }),
    createHumanLogSink(join(settings.outDir, "run.log"), { kubectlCalls: true }),
    createNdjsonLogSink(join(settings.outDir, "log.ndjson")),
  ];
  const sinks = logs.map((log) => log.sink);
  const emit = createEventEmitter(sinks);
  const kubectl = new Kubectl({ binary: config.kubectlPath, env, onCall: (args) => emit({ kind: "kubectl", args }) });
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      process.stderr.write(`\nknotless-runner-k8s: ${signal}: cancelling the run and deleting its Job (again to exit at once)\n`);
      controller.abort(new CancelledError(`cancelled by ${signal}`));
      return;
    }
    process.stderr.write(`knotless-runner-k8s: exiting now; the Job may remain: ${formatCommand(config.kubectlPath, buildDeleteJobArgs(settings.target, settings.jobName))}\n`);
    process.exit(EXIT.cancelled);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const result = await runWorkflow({ settings, kubectl, signal: controller.signal, sinks });
    await writeFile(join(settings.outDir, "result.json"), `${JSON.stringify(result, null, 2)}\n`);
    process.stderr.write(`result: ${join(settings.outDir, "result.json")}\n`);
    return exitCodeForResult(result);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await Promise.all(logs.map((log) => log.close()));
  }
}
