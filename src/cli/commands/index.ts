// Every subcommand of the CLI, in the order --help lists them. Each lives in its own file and loads its work lazily.
import type { CommandSpec } from "../command-spec.js";
import { cacheCommand } from "./cache.js";
import { cancelCommand } from "./cancel.js";
import { doctorCommand } from "./doctor.js";
import { executorCommand } from "./executor.js";
import { gcCommand } from "./gc.js";
import { listCommand } from "./list.js";
import { credentialsCommand } from "./credentials.js";
import { runCommand } from "./run.js";
import { serveCommand } from "./serve.js";
import { validateCommand } from "./validate.js";
import { warmCommand } from "./warm.js";

export const COMMANDS: readonly CommandSpec<never>[] = [
  runCommand,
  validateCommand,
  credentialsCommand,
  doctorCommand,
  listCommand,
  cancelCommand,
  gcCommand,
  warmCommand,
  cacheCommand,
  serveCommand,
  executorCommand,
];
