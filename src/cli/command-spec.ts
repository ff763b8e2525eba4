// What every subcommand declares: its name, arguments and options (for help and parsing), and how it runs.
import type { OptionSpec } from "./option-spec.js";

/**
 * The process's edge as a command sees it: the bin passes its own environment and streams; tests pass collecting
 * writers and run a command line in their own process (test/support/run-cli.ts).
 */
export interface CommandIo {
  /** Read here, at the CLI edge, and nowhere below: commands resolve what they need and pass it down typed. */
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** What a command's action is handed: options as parsed (strings, flags, lists), positional arguments, its edge. */
export interface CommandInput<Raw = Record<string, unknown>> extends CommandIo {
  readonly options: Raw;
  readonly args: readonly string[];
}

/**
 * One subcommand, in its own file under src/cli/commands/. Declaring it costs nothing at start-up: `execute`
 * loads the modules it needs when it runs. It returns the exit code (src/cli/exit-codes.ts); a thrown InputError,
 * InfraError or CancelledError is mapped there too.
 */
export interface CommandSpec<Raw = Record<string, unknown>> {
  readonly name: string;
  readonly summary: string;
  /** Positional arguments as commander declares them, e.g. `<paths...>` or `<run-id>`. */
  readonly arguments?: string;
  readonly options: readonly OptionSpec[];
  execute(input: CommandInput<Raw>): Promise<number>;
}
