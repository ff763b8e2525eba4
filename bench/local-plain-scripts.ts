// The plain POSIX-sh baselines of the local-cluster benchmarks: the same kubectl calls, with `@label` marker lines.
import { buildStepCall, CREATE_AND_WAIT, DELETE, DOWNLOAD, PRELUDE, UPLOAD } from "./plain-scripts.js";

/**
 * Create and wait, marked: `@created` after the create, `@poll` before each `get pods`, `@running POD` once a
 * `get pods` showed Running. The markers are builtin echos: no fork, no cost to the script.
 */
function buildMarkedCreateAndWait(): string {
  const marked = CREATE_AND_WAIT.replace("while :; do\n", "echo @created\nwhile :; do\n  echo @poll\n");
  if (marked === CREATE_AND_WAIT) throw new Error("plain-scripts.ts changed: no wait loop to mark");
  return `${marked}\necho "@running $pod"`;
}

/** Benchmark 1: the whole workflow (create, wait, upload, one exec per step, download into $DEST, delete), marked. */
export function buildMarkedWorkflowScript(stepScripts: readonly string[]): string {
  return [
    PRELUDE,
    buildMarkedCreateAndWait(),
    UPLOAD,
    "echo @uploaded",
    ...stepScripts.flatMap((script) => [buildStepCall(script), "echo @step"]),
    DOWNLOAD,
    "echo @downloaded",
    DELETE,
    "echo @deleted",
    "",
  ].join("\n");
}

/**
 * Benchmark 2: create, wait until a `get pods` shows Running, then `kubectl exec POD -c run -- echo hi` (the figure).
 * Then, for the breakdown only: the runner's checkout upload done plainly ($CHECKOUT), and `echo hi` once more.
 */
export function buildFirstOutputScript(): string {
  const echo = 'k exec "$pod" -c run -- echo hi';
  return [
    PRELUDE,
    buildMarkedCreateAndWait(),
    echo,
    "echo @upload",
    UPLOAD,
    "echo @uploaded",
    echo,
    "echo @done",
    "",
  ].join("\n");
}

/** Deletes $JOB exactly as the runner's teardown does. */
export function buildDeleteScript(): string {
  return [PRELUDE, DELETE, ""].join("\n");
}

/** Benchmark 4: the plain download of /outputs from $POD into $DEST (a fresh directory). */
export function buildPlainDownloadScript(): string {
  return [PRELUDE, 'pod="$POD"', DOWNLOAD, ""].join("\n");
}

/** Benchmark 4's breakdown: one exec whose stdout is discarded (the pod side and the transport, no host extraction). */
export function buildDiscardingExecScript(command: string): string {
  return [PRELUDE, `k exec "$POD" -c run -- ${command} > /dev/null`, ""].join("\n");
}
