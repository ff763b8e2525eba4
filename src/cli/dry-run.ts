// Prints what a run would do: the Job manifest and every kubectl call, shell-quoted; spawns nothing.
import { buildRunManifest } from "../executor/kubernetes-executor.js";
import { formatCommand } from "../events/format-event.js";
import { buildPlaceholderManifest } from "../k8s/placeholder-manifest.js";
import { PLANNED_PLACEHOLDER, planKubectlCalls, type PlannedCall } from "../plan/call-plan.js";
import type { RunConfig } from "./resolve-config.js";
import { scanUploadTrees } from "../transfer/scan-tree.js";

/** Validates like a run (the checkout and shared steps are scanned: an unreadable file is a ScanError), then renders. */
export async function renderDryRun(config: RunConfig): Promise<string> {
  scanUploadTrees(config.settings.checkoutDir, config.settings.sharedStepsDir);
  const { stringify } = await import("yaml");
  const manifest = buildRunManifest(config, "<random per run>");
  const lines = ["# Job manifest", "---", stringify(manifest).trimEnd(), "---"];
  const { keepWarm, target, image, cpu, memory } = config.settings;
  if (keepWarm) {
    const placeholder = buildPlaceholderManifest({ name: PLANNED_PLACEHOLDER, ...(target.namespaceFromContext ? {} : { namespace: target.namespace }), image, cpu, memory, seconds: keepWarm.seconds });
    lines.push("# Warm placeholder manifest (--keep-warm), left after the Job is deleted", "---", stringify(placeholder).trimEnd(), "---");
  }
  lines.push("# kubectl calls, in order");
  lines.push(...formatPlannedCalls(config.kubectlPath, planKubectlCalls(config.settings)));
  return `${lines.join("\n")}\n`;
}

/** Each planned call as a comment (when, and what goes to stdin) and the shell-quoted command. */
export function formatPlannedCalls(kubectlPath: string, calls: readonly PlannedCall[]): string[] {
  const lines: string[] = [];
  for (const call of calls) {
    const comment = [call.note, call.stdin ? `stdin: ${call.stdin}` : undefined].filter(Boolean).join("; ");
    if (comment) lines.push(`# ${comment}`);
    lines.push(formatCommand(kubectlPath, call.args));
  }
  return lines;
}
