// `validate`: checks workflow files (and `--config`) without a cluster or a checkout; exit 0 when all are good, 2 listing every error.
import { InputError } from "../../core/errors.js";
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";
import { WorkflowError } from "../../workflow/workflow-errors.js";
import { formatValidateReport, validateWorkflowPaths } from "../../settings/validate-files.js";
import { readRunnerConfig } from "../../config/read-runner-config.js";

export const validateCommand: CommandSpec<{ config?: string }> = {
  name: "validate",
  summary:
    "check workflow files (each FILE, or every *.yml and *.yaml directly in each DIR), and the runner configuration with --config (then the files against its limits too), without a cluster or a checkout",
  arguments: "[paths...]",
  options: [
    {
      flag: "--config <file>",
      description: "the runner configuration to check, and to hold the workflow files to (its limits)",
    },
  ],
  execute: async ({ args, options, stdout, stderr }) => {
    if (args.length === 0 && options.config === undefined)
      throw new InputError("validate expects workflow files or directories, or --config FILE");
    let runner;
    let configErrors;
    if (options.config !== undefined) {
      try {
        runner = await readRunnerConfig(options.config);
      } catch (error) {
        if (!(error instanceof WorkflowError)) throw error;
        configErrors = error.issues;
      }
    }
    const report = await validateWorkflowPaths(args, runner);
    const configCheck =
      options.config === undefined
        ? []
        : [{ file: options.config, config: true as const, errors: configErrors ?? [], warnings: [] }];
    const output = formatValidateReport({ ...report, checks: [...configCheck, ...report.checks] });
    stdout.write(output.stdout);
    stderr.write(output.stderr);
    return output.ok ? EXIT.success : EXIT.badInput;
  },
};
