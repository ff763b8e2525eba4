// Formats run events for people: one pure function shared by the console and run.log.
import { formatDuration } from "../core/duration.js";
import { formatBytes } from "../core/format-bytes.js";
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
    case "api-call":
      return `api ${event.method} ${event.path} → ${event.status ?? "no answer"} (${formatDuration(event.durationMs)})`;
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
    case "service-log":
      return `service ${event.service}, its last log lines${event.when === "end" ? " at the end of the run" : ""}:\n${event.text
        .split("\n")
        .map((line) => `  | ${line}`)
        .join("\n")}`;
    case "notice":
      return `${event.level === "info" ? "" : `${event.level}: `}${event.message}`;
    case "cache-restore":
      return formatCacheRestore(event);
    case "cache-save":
      return formatCacheSave(event);
    case "artifact":
      return formatArtifact(event);
    case "run-end":
      return `run ${event.status} in ${formatDuration(event.durationMs)}${event.error ? `: ${event.error}` : ""}`;
  }
}

function formatCacheRestore(event: Extract<RunEvent, { kind: "cache-restore" }>): string {
  const moved = `${formatBytes(event.bytes)} in ${formatDuration(event.durationMs)}`;
  switch (event.status) {
    case "exact":
      return `cache ${event.key}: exact hit, restored ${moved}`;
    case "fallback":
      return `cache ${event.key}: fallback hit, restored ${event.restoredKey ?? "?"} (${moved})`;
    case "miss":
      return `cache ${event.key}: miss${event.reason ? ` (${event.reason})` : ""}`;
    case "failed":
      return `warning: cache ${event.key}: restore failed after ${formatDuration(event.durationMs)}, the run goes on without it: ${event.reason ?? "no reason given"}`;
  }
}

function formatCacheSave(event: Extract<RunEvent, { kind: "cache-save" }>): string {
  switch (event.status) {
    case "saved":
      return `cache ${event.key}: saved ${formatBytes(event.bytes)} in ${formatDuration(event.durationMs)}`;
    case "exists":
      return `cache ${event.key}: not saved, another run saved this key first (${formatBytes(event.bytes)} packed and discarded in ${formatDuration(event.durationMs)})`;
    case "skipped":
      return `cache ${event.key}: not saved: ${event.reason ?? "skipped"}`;
    case "failed":
      return `warning: cache ${event.key}: save failed after ${formatDuration(event.durationMs)}, nothing stored: ${event.reason ?? "no reason given"}`;
  }
}

function formatArtifact(event: Extract<RunEvent, { kind: "artifact" }>): string {
  switch (event.status) {
    case "collected":
      return `artifact ${event.name}: collected ${event.files} ${event.files === 1 ? "file" : "files"}, ${formatBytes(event.bytes)} in ${formatDuration(event.durationMs)}${event.reason ? ` (${event.reason})` : ""}`;
    case "empty":
      return `${event.required ? "error" : "warning"}: artifact ${event.name}: ${event.reason ?? "its patterns matched no file"}`;
    case "skipped":
      return `artifact ${event.name}: skipped: ${event.reason ?? "its when did not match"}`;
    case "failed":
      return `${event.required ? "error" : "warning"}: artifact ${event.name}: not collected: ${event.reason ?? "no reason given"}`;
  }
}
