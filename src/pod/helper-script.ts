// The runner's in-pod helper: a POSIX sh script that runs steps detached from the exec stream and follows them.
import { DEFAULT_STEP_SHELL } from "../workflow/step-environment.js";
import { OUTPUTS_COUNT_TAG, UPLOAD_RECEIPT_ARCHIVE_PATH } from "../transfer/transfer-receipt.js";
import { quoteShellWord } from "./env-file.js";
import {
  POD_CARRIED_ENV_PATH,
  POD_ENV_DIR,
  POD_OUTPUTS_DIR,
  POD_RUN_ENV_PATH,
  POD_RUNNER_DIR,
  POD_SECRETS_DIR,
  POD_SECRETS_PATH,
  POD_STEPS_DIR,
  POD_WORK_DIR,
} from "../workflow/pod-paths.js";
import { buildBeatSettings } from "./keep-alive.js";
import { SECRETS_RECEIPT_TAG } from "./secrets-payload.js";
import { DEFAULT_MAX_LOG_BYTES } from "../events/output-budget.js";
import { CACHE_HELPER_SETTINGS } from "./cache-script.js";
import { renderShellProgram } from "./render-sh.js";
import { BEAT_SH, CACHE_SH, HELPER_SH, UPLOAD_SH } from "./sh/embedded.gen.js";

/** The environment variable that marks every process of step N, so a timeout can find them all. */
export const STEP_MARK_VARIABLE = "KNOTLESS_STEP_MARK";

/** The environment variable naming the file a step may append variables for the later steps to. */
export const STEP_ENV_FILE_VARIABLE = "KNOTLESS_ENV";
/** The most a step may write to $KNOTLESS_ENV (1 MiB): more could not reach a later step's process anyway. */
export const MAX_STEP_ENV_FILE_BYTES = 1024 * 1024;

/** Seconds of a step's silence after which `follow` sends an `H` frame, so idle stream timeouts do not cut the exec. */
export const SILENCE_FRAME_SECONDS = 10;

/** Path of step N's script in the pod (N counts from 0). */
export function podStepScriptPath(index: number): string {
  return `${POD_RUNNER_DIR}/steps/${index}.sh`;
}

/** Path of step N's own environment (`export` lines) in the pod. */
export function podStepEnvPath(index: number): string {
  return `${POD_ENV_DIR}/${index}.env`;
}

/** Path of the file `$KNOTLESS_ENV` names for step N. */
export function podStepEnvFilePath(index: number): string {
  return `${POD_RUNNER_DIR}/run/${index}/env`;
}

/** What the helper is generated for: the run's settings that shape how every step starts. */
export interface HelperOptions {
  /** The steps' shell as words; default `sh -e`. */
  readonly shell?: readonly string[];
  /** The run has secrets: a step refuses to start without them (they are delivered after the upload). */
  readonly secrets?: boolean;
  /** Seconds between the beats of a running helper call; default BEAT_SECONDS (tests shorten it). */
  readonly beatSeconds?: number;
  /**
   * Most bytes of each of a step's two output files in the pod (`maxLogBytes`: no log keeps more of the run's output
   * anyway); default DEFAULT_MAX_LOG_BYTES. The rest is read, counted and discarded, so the step never blocks on it.
   */
  readonly outputBoundBytes?: number;
  /**
   * How long a step's end waits for its output copiers: it gives up after `quiet` seconds in which they moved nothing
   * or `most` seconds in all (a process the step left running holds its output open). Default SETTLE_SECONDS.
   */
  readonly settleSeconds?: { readonly quiet: number; readonly most: number };
}

/** A loaded node slows the copiers without stopping them, hence a window of no progress rather than a fixed wait. */
export const SETTLE_SECONDS = { quiet: 2, most: 10 } as const;
/** settle polls every 50 ms once past its first few 10 ms polls. */
const SETTLE_POLLS_PER_SECOND = 20;

/** Step N's stdout past the pod's bound: `D O <bytes>` (or `D O ?` when the step was stopped before the count ended); `D E` for stderr. */
export const DROPPED_FRAME_TAG = "D";

/**
 * The helper as installed in the pod: src/pod/sh/helper.sh (its commands, frames and exit codes open that file) after
 * beat.sh and cache.sh, with the run's settings before them. Values are never on a command line.
 */
export function buildHelperScript(options: HelperOptions = {}): string {
  const shell = options.shell ?? DEFAULT_STEP_SHELL;
  const bound = options.outputBoundBytes ?? DEFAULT_MAX_LOG_BYTES;
  if (!Number.isSafeInteger(bound) || bound < 0)
    throw new RangeError(`the output bound must be a whole number of bytes >= 0, got ${bound}`);
  const settle = options.settleSeconds ?? SETTLE_SECONDS;
  const [quietPolls, mostPolls] = [settle.quiet, settle.most].map((seconds) =>
    Math.max(1, Math.round(seconds * SETTLE_POLLS_PER_SECOND)),
  );
  const settings = {
    RUNNER_DIR: POD_RUNNER_DIR,
    WORK_DIR: POD_WORK_DIR,
    OUTPUTS_DIR: POD_OUTPUTS_DIR,
    ENV_DIR: POD_ENV_DIR,
    RUN_ENV_PATH: POD_RUN_ENV_PATH,
    CARRIED_ENV_PATH: POD_CARRIED_ENV_PATH,
    SECRETS_DIR: POD_SECRETS_DIR,
    SECRETS_PATH: POD_SECRETS_PATH,
    NEED_SECRETS: options.secrets ? 1 : 0,
    STEP_SHELL: shell.map(quoteShellWord).join(" "),
    OUTPUT_BOUND: bound,
    SETTLE_QUIET_POLLS: quietPolls!,
    SETTLE_MOST_POLLS: mostPolls!,
    STEP_MARK_VARIABLE,
    STEP_ENV_FILE_VARIABLE,
    MAX_STEP_ENV_FILE_BYTES,
    SILENCE_FRAME_SECONDS,
    SECRETS_RECEIPT_TAG,
    OUTPUTS_COUNT_TAG,
    UPLOAD_RECEIPT_PATH: `/${UPLOAD_RECEIPT_ARCHIVE_PATH}`,
    ...buildBeatSettings(options.beatSeconds),
    ...CACHE_HELPER_SETTINGS,
  };
  return `#!/bin/sh\n# knotless in-pod helper (generated by knotless-runner-k8s from src/pod/sh/helper.sh)\n${renderShellProgram(settings, BEAT_SH, CACHE_SH, HELPER_SH)}\n`;
}

/**
 * The upload command (the helper is not in the pod yet): extracts a tar from stdin at `/` (entries are
 * `work/...`, `steps/...`, `knotless/...`, the receipt last), then prints the receipt it extracted and the number
 * of lines `find /work /steps` prints (src/transfer/transfer-receipt.ts). Whatever tar leaves unread is drained, so
 * the sender never writes into a closed pipe or blocks on a full one; a failing tar's exit code is the command's.
 */
export function buildUploadCommand(beatSeconds?: number): string[] {
  const settings = {
    ...buildBeatSettings(beatSeconds),
    RECEIPT_PATH: `/${UPLOAD_RECEIPT_ARCHIVE_PATH}`,
    WORK_DIR: POD_WORK_DIR,
    STEPS_DIR: POD_STEPS_DIR,
  };
  return ["sh", "-c", renderShellProgram(settings, BEAT_SH, UPLOAD_SH)];
}

/** The argv of each helper call. */
export const helperCommand = {
  run: (index: number) => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "run", String(index)],
  follow: (index: number, stdoutOffset: number, stderrOffset: number) => [
    "sh",
    `${POD_RUNNER_DIR}/helper.sh`,
    "follow",
    String(index),
    String(stdoutOffset),
    String(stderrOffset),
  ],
  kill: (index: number, graceSeconds: number) => [
    "sh",
    `${POD_RUNNER_DIR}/helper.sh`,
    "kill",
    String(index),
    String(graceSeconds),
  ],
  /** The line `kill` prints once step `index` has no process left. */
  killConfirmation: (index: number) => `stopped ${index}`,
  packOutputs: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "pack-outputs"],
  /** Reads the secrets from stdin; the argv names no secret and no value. */
  takeSecrets: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "secrets"],
  forgetSecrets: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "forget-secrets"],
  /** Prints the secrets file to stdout: for a re-attaching runner, which keeps it in memory and never logs it. */
  readSecrets: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "read-secrets"],
  /**
   * Prints what the pod shows of the run's progress (src/pod/pod-run-state.ts); `upload absent` when the helper
   * itself is not there yet (the runner stopped early in the upload).
   */
  state: () => [
    "sh",
    "-c",
    `[ -r ${POD_RUNNER_DIR}/helper.sh ] || { echo "upload absent"; exit 0; }; exec sh ${POD_RUNNER_DIR}/helper.sh state`,
  ],
} as const;
