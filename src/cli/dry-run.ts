// Prints what a run would do: the Job manifest and every kubectl call, shell-quoted; spawns nothing.
import { buildRunManifest } from "../executor/kubernetes-executor.js";
import { formatCommand } from "../events/format-event.js";
import { planKubectlCalls } from "../plan/call-plan.js";
import type { RunConfig } from "./resolve-config.js";
import { scanUploadTrees } from "../transfer/scan-tree.js";

/** Validates like a run (the checkout and shared steps are scanned: an unreadable file is a ScanError), then renders. */
export async function renderDryRun(config: RunConfig): Promise<string> {
  scanUploadTrees(config.settings.checkoutDir, config.settings.sharedStepsDir);
  const { stringify } = await import("yaml");
  const manifest = buildRunManifest(config, "<random per run>");
  const lines = ["# Job manifest", "---", stringify(manifest).trimEnd(), "---", "# kubectl calls, in order"];
  for (const call of planKubectlCalls(config.settings, config.timings)) {
    const comment = [call.note, call.stdin ? `stdin: ${call.stdin}` : undefined].filter(Boolean).join("; ");
    if (comment) lines.push(`# ${comment}`);
    lines.push(formatCommand(config.kubectlPath, call.args));
  }
  return `${lines.join("\n")}\n`;
}
