// The command line: dispatches to one subcommand (src/cli/commands/), and maps what escapes it to an exit code.
import type { Command } from "commander";
import { describeError } from "../core/errors.js";
import type { CommandIo, CommandSpec } from "./command-spec.js";
import { COMMANDS } from "./commands/index.js";
import { executeRun } from "./commands/run.js";
import { EXIT, exitCodeForError, formatExitCodesHelp } from "./exit-codes.js";
import { addOptions } from "./option-spec.js";
import { parseRunFast } from "./run-options.js";

/**
 * Loaded only for help, errors, other commands and unusual command lines: a plain `run` is read by parseRunFast.
 * `onAction` receives each command's parsed input instead of running it (tests compare parsers with it); help and
 * parse errors go to `output` (the process's streams unless given).
 */
export async function buildProgram(
  onAction: (command: CommandSpec<never>, options: Record<string, unknown>, args: string[]) => Promise<number>,
  output: Pick<CommandIo, "stdout" | "stderr"> = process,
): Promise<Command> {
  // commander loads only here: ~25 ms of CPU a plain `run` (parsed by parseRunFast) does not pay.
  const { Command } = await import("commander");
  const program = new Command("knotless-runner-k8s")
    .description("Runs one knotless workflow run as one Kubernetes batch/v1 Job, through kubectl.")
    .exitOverride()
    // Before the subcommands are added: each copies its parent's output settings when it is made.
    .configureOutput({ writeOut: (text) => output.stdout.write(text), writeErr: (text) => output.stderr.write(text) })
    .showHelpAfterError(false)
    .addHelpText("after", formatExitCodesHelp());
  for (const spec of COMMANDS) {
    const command = program
      .command(spec.arguments ? `${spec.name} ${spec.arguments}` : spec.name)
      .description(spec.summary);
    addOptions(command, spec.options);
    command.addHelpText("after", formatExitCodesHelp()).action(async (...received: unknown[]) => {
      // commander passes the positional arguments, then the options, then the command itself.
      const positional = received
        .slice(0, -2)
        .flatMap((value) => (Array.isArray(value) ? value : value === undefined ? [] : [value])) as string[];
      await onAction(spec, received.at(-2) as Record<string, unknown>, positional);
    });
  }
  return program;
}

/**
 * Runs one command line; returns the exit code. The bin passes the process's environment and streams; `io.env` is
 * read here and nowhere below. Commands that serve until a signal (serve, executor) and real runs install process
 * signal handlers: those are for a process of their own.
 */
export async function main(argv: readonly string[], io: CommandIo): Promise<number> {
  let code: number = EXIT.success;
  try {
    const plain = parseRunFast(argv);
    if (plain) return await executeRun(plain, io);
    const [program, { CommanderError }] = await Promise.all([
      buildProgram(
        async (spec, options, args) => (code = await spec.execute({ options: options as never, args, ...io })),
        io,
      ),
      import("commander"),
    ]);
    try {
      if (argv.length === 0) {
        program.outputHelp();
        return EXIT.badInput;
      }
      await program.parseAsync([...argv], { from: "user" });
      return code;
    } catch (error) {
      if (!(error instanceof CommanderError)) throw error;
      if (
        error.code === "commander.helpDisplayed" ||
        error.code === "commander.version" ||
        error.code === "commander.help"
      )
        return EXIT.success;
      return EXIT.badInput;
    }
  } catch (error) {
    io.stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}
