// Formats run events for people: one pure function shared by the console and run.log.
import { formatDuration } from "../config/duration.js";
import type { RunEvent } from "./run-events.js";

/** Shell-quotes one argument for display (POSIX sh single quotes when needed). */
export function quoteArg(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

export function formatCommand(binary: string, args: readonly string[]): string {
  return [binary, ...args].map(quoteArg).join(" ");
}

/**
 * The human line(s) for an event, without timestamps; step output is not handled here (sinks stream it).
 * Returns undefined for events a person does not need to see.
 */
export function formatEvent(event: RunEvent): string | undefined {
  switch (event.kind) {
    case "run-start":
      return `run ${event.runId}: Job ${event.namespace === undefined ? "" : `${event.namespace}/`}${event.jobName}, image ${event.image}, ${event.steps.length} step(s)`;
    case "kubectl":
      return `$ ${formatCommand("kubectl", event.args)}`;
    case "phase-start":
      return undefined;
    case "phase-end":
      return `${event.ok ? "ok" : "FAILED"} ${event.phase} (${formatDuration(event.durationMs)}): ${event.detail}`;
    case "pod-progress": {
      const what = [event.phase, event.reason].filter(Boolean).join(" ");
      const extra = event.event ?? event.message;
      return `waiting for the pod: ${what} after ${formatDuration(event.elapsedMs)}${extra ? ` — ${extra}` : ""}`;
    }
    case "pod-ready":
      return `pod ${event.pod} running on ${event.node || "its node"} after ${formatDuration(event.waitedMs)}`;
    case "step-start":
      return `▶ step ${event.index + 1}: ${event.name}`;
    case "step-output":
      return undefined;
    case "step-end": {
      const code = event.exitCode === null ? "" : `exit ${event.exitCode}, `;
      const mark = event.status === "success" ? "✔" : "✘";
      return `${mark} step ${event.index + 1}: ${event.name} ${event.status} (${code}${formatDuration(event.durationMs)}${event.timedOut ? ", timed out" : ""})`;
    }
    case "notice":
      return `${event.level === "info" ? "" : `${event.level}: `}${event.message}`;
    case "run-end":
      return `run ${event.status} in ${formatDuration(event.durationMs)}${event.error ? `: ${event.error}` : ""}`;
  }
}
