// The outcome of a run whose workflow does not match its trigger: say why, write result.json (status skipped), touch no cluster.
import { join } from "node:path";
import { buildNotMatchedResult, buildSkippedStep } from "../run/run-result.js";
import { writeResultFile } from "../run/result-file.js";
import { makeDirectorySync } from "../core/make-directory.js";
import type { RunCommand } from "./resolve-run-command.js";

/** Writes the skipped result into --out and returns the line to print; never calls kubectl. */
export async function writeNotMatchedResult(
  config: RunCommand & { readonly notMatched: { readonly reason: string } },
): Promise<string> {
  const { settings } = config;
  const now = new Date();
  makeDirectorySync(settings.outDir);
  const result = buildNotMatchedResult({
    runId: settings.runId,
    startedAt: now,
    finishedAt: now,
    job: {
      namespace: settings.target.namespace ?? "",
      name: settings.jobName,
      pod: null,
      node: null,
      image: settings.image,
    },
    steps: settings.steps.map((step) => buildSkippedStep(step.name)),
    logs: { limitBytes: settings.maxLogBytes, keptBytes: 0, droppedBytes: 0 },
    workflow: settings.workflow!,
  });
  const path = join(settings.outDir, "result.json");
  await writeResultFile(path, result);
  return `workflow ${settings.workflow!.name} does not run for this trigger: ${config.notMatched.reason}; nothing was started (result: ${path})`;
}
