// Every subcommand of the CLI, in the order --help lists them. Each lives in its own file and loads its work lazily.
import type { CommandSpec } from "../command-spec.js";
import { runCommand } from "./run.js";
import { warmCommand } from "./warm.js";

export const COMMANDS: readonly CommandSpec<never>[] = [runCommand, warmCommand];
