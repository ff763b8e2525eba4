// Turns the run's (already masked) events into spindle's log-line JSON: control lines when a step starts and ends, data lines for its output; setup as system steps (-1).
import type { Phase, RunEvent } from "../events/run-events.js";

/** One line as spindle's logger writes it (models/logger.go): `step_kind` 1 is a user step, 0 (system) is left out. */
export interface SpindleLogLine {
  readonly kind: "data" | "control";
  readonly content: string;
  readonly time: string;
  readonly step_id: number;
  readonly stream?: "stdout" | "stderr";
  readonly step_status?: "start" | "end";
  readonly step_kind?: number;
  readonly step_command?: string;
}

/** The step id of setup work, as spindle numbers it. */
export const SYSTEM_STEP_ID = -1;
const USER_STEP_KIND = 1;

/** The setup phases shown as system steps, and what each is called there. */
const SYSTEM_STEPS: Partial<Record<Phase, string>> = {
  pod: "dependencies: pull the image and start the pod",
  services: "services: start the workflow's services",
  clone: "clone: fetch the commit",
};

/** The log lines one event makes (none for the runner's own bookkeeping: cluster calls, caches' timings). */
export function buildLogLines(event: RunEvent): SpindleLogLine[] {
  const time = event.time;
  switch (event.kind) {
    case "phase-start": {
      const name = SYSTEM_STEPS[event.phase];
      return name === undefined
        ? []
        : [{ kind: "control", content: name, time, step_id: SYSTEM_STEP_ID, step_status: "start", step_command: name }];
    }
    case "phase-end": {
      const name = SYSTEM_STEPS[event.phase];
      if (name === undefined) return [];
      const end: SpindleLogLine = {
        kind: "control",
        content: name,
        time,
        step_id: SYSTEM_STEP_ID,
        step_status: "end",
        step_command: name,
      };
      return event.ok
        ? [end]
        : [{ kind: "data", content: event.detail, time, step_id: SYSTEM_STEP_ID, stream: "stderr" }, end];
    }
    case "pod-progress":
      return event.reason === undefined
        ? []
        : [
            {
              kind: "data",
              content: `${event.reason}${event.message ? `: ${event.message}` : ""}`,
              time,
              step_id: SYSTEM_STEP_ID,
              stream: "stdout",
            },
          ];
    case "step-start":
      return [
        {
          kind: "control",
          content: event.name,
          time,
          step_id: event.index,
          step_status: "start",
          step_kind: USER_STEP_KIND,
          step_command: event.command,
        },
      ];
    case "step-output": {
      const content = event.text.replace(/\n+$/, "");
      return content === "" && event.text === ""
        ? []
        : [{ kind: "data", content, time, step_id: event.index, stream: event.stream }];
    }
    case "step-end":
      return [
        {
          kind: "control",
          content: event.name,
          time,
          step_id: event.index,
          step_status: "end",
          step_kind: USER_STEP_KIND,
        },
      ];
    case "notice":
      return event.level === "info"
        ? []
        : [
            {
              kind: "data",
              content: `${event.level}: ${event.message}`,
              time,
              step_id: SYSTEM_STEP_ID,
              stream: "stderr",
            },
          ];
    case "service-log":
      return event.when === "not-ready"
        ? [
            {
              kind: "data",
              content: `service ${event.service}: ${event.text.replace(/\n+$/, "")}`,
              time,
              step_id: SYSTEM_STEP_ID,
              stream: "stderr",
            },
          ]
        : [];
    default:
      return [];
  }
}

/** One line's bytes: the JSON object and a newline, as LiveLog and the log file carry it. */
export function formatLogLine(line: SpindleLogLine): string {
  return `${JSON.stringify(line)}\n`;
}
