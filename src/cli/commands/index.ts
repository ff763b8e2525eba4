// Every subcommand of the CLI, in the order --help lists them. Each lives in its own file and loads its work lazily.
import type { CommandSpec } from "../command-spec.js";
import { credentialsCommand } from "./credentials.js";
import { runCommand } from "./run.js";

export const COMMANDS: readonly CommandSpec<never>[] = [runCommand, credentialsCommand];
