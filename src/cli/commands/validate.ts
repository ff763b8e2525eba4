// `validate`: checks workflow files without a cluster or a checkout; exit 0 when all are good, 2 listing every error.
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";

export const validateCommand: CommandSpec = {
  name: "validate",
  summary: "check workflow files (each FILE, or every *.yml and *.yaml directly in each DIR) without a cluster or a checkout",
  arguments: "<paths...>",
  options: [],
  execute: async ({ args }) => {
    // Loaded here, so that the command costs nothing until it runs: only the YAML parser comes with it.
    const { formatValidateReport, validateWorkflowPaths } = await import("../../workflow/validate-files.js");
    const output = formatValidateReport(await validateWorkflowPaths(args));
    process.stdout.write(output.stdout);
    process.stderr.write(output.stderr);
    return output.ok ? EXIT.success : EXIT.badInput;
  },
};
