// The run pod's dead man's switch: PID 1's idle guard, and the beat every runner exec keeps on a clock while it runs.
import { formatDuration } from "../core/duration.js";
import { POD_HEARTBEAT_PATH } from "../workflow/pod-paths.js";
import { renderShellProgram } from "./render-sh.js";
import { KEEP_ALIVE_SH } from "./sh/embedded.gen.js";

/** The run container's exit code when its idle guard stopped it (EX_TEMPFAIL): how the runner tells it from a crash. */
export const IDLE_EXIT_CODE = 75;
/** The default of `--pod-idle-timeout`. */
export const DEFAULT_POD_IDLE_SECONDS = 600;
/** Seconds between two beats of a running exec (the least `--pod-idle-timeout` is three, so one late beat never trips the guard). */
export const BEAT_SECONDS = 5;
/** Where the kubelet reads a container's termination message (the Kubernetes default path). */
const TERMINATION_LOG = "/dev/termination-log";

/**
 * The settings of src/pod/sh/beat.sh, which every runner exec into the run pod (the helper, the upload, the PVC cache
 * scripts) sources: one beat now, then one every `beatSeconds` for as long as the exec's shell lives (or, for a
 * follow, also only while the runner holds its stdin). Liveness is the exec, never its output or silence.
 */
export function buildBeatSettings(beatSeconds = BEAT_SECONDS): {
  readonly HEARTBEAT_PATH: string;
  readonly BEAT_SECONDS: number;
} {
  return { HEARTBEAT_PATH: POD_HEARTBEAT_PATH, BEAT_SECONDS: beatSeconds };
}

/** The words the run, `list` and `gc` use for a pod its guard stopped. */
export function describeIdleStop(idleSeconds: number | undefined): string {
  const after =
    idleSeconds === undefined
      ? ""
      : ` after ${idleSeconds % 60 === 0 ? `${idleSeconds / 60}m` : formatDuration(idleSeconds * 1000)}`;
  return `the pod stopped itself${after} without runner activity (its runner is gone, or could not reach it)`;
}

/** PID 1 of the run container: src/pod/sh/keep-alive.sh, exiting IDLE_EXIT_CODE once no runner exec beat for `idleSeconds`. */
export function buildKeepAliveScript(idleSeconds: number): string {
  const settings = {
    IDLE_SECONDS: idleSeconds,
    POLL_SECONDS: Math.min(5, Math.max(1, Math.floor(idleSeconds / 4))),
    IDLE_MESSAGE: describeIdleStop(idleSeconds),
    HEARTBEAT_PATH: POD_HEARTBEAT_PATH,
    TERMINATION_LOG,
    IDLE_EXIT_CODE,
  };
  return renderShellProgram(settings, KEEP_ALIVE_SH);
}
