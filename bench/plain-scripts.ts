// The plain POSIX-sh baselines: the same kubectl calls as the runner, in the same order, with nothing around them.

/** Quotes one word for POSIX sh. */
export function quoteShellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * `k ARGS...` runs the fake kubectl with the runner's global flags. Every value comes from the environment:
 * K (kubectl), KC (kubeconfig), NS (namespace), and per script JOB, SELECTOR, MANIFEST, CHECKOUT, OUT, POD, DEST.
 */
export const PRELUDE = `set -eu
k() { "$K" --kubeconfig "$KC" --namespace "$NS" "$@"; }`;

/**
 * Creates the Job from $MANIFEST (JSON) and polls `get pods` like the runner (250 ms) until Running; prints the pod
 * name. Like the runner's, the create names no namespace (kubectl takes the kubeconfig context's, $NS) and prints
 * the created Job as JSON.
 */
export const CREATE_AND_WAIT = `"$K" --kubeconfig "$KC" create --request-timeout 30s -f - -o json < "$MANIFEST" > /dev/null
while :; do
  pods=$(k get pods --selector "$SELECTOR" --request-timeout 30s -o json)
  case $pods in *'"phase": "Running"'*) break ;; esac
  sleep 0.25
done
pod=$(printf '%s\\n' "$pods" | sed -n "s/.*\\"name\\": \\"\\($JOB-[a-z0-9]*\\)\\".*/\\1/p" | head -n 1)
[ -n "$pod" ] || { echo "no pod name in: $pods" >&2; exit 1; }`;

export const UPLOAD = `tar -cf - -C "$CHECKOUT" . | k exec -i "$pod" -c run -- tar -xf - -C /work`;
export const DOWNLOAD = `mkdir -p "$DEST"
k exec "$pod" -c run -- tar -cf - -C /outputs . | tar -xf - -C "$DEST"`;
export const DELETE = `k delete job "$JOB" --cascade=background --ignore-not-found --wait=false --request-timeout 30s > /dev/null`;

export function buildStepCall(script: string): string {
  return `k exec "$pod" -c run -- sh -ec ${quoteShellWord(`cd /work\n${script}`)}`;
}

/** The whole workflow as one script: create, get pods, upload, one exec per step, download into $DEST, delete. */
export function buildPlainWorkflowScript(stepScripts: readonly string[]): string {
  return [PRELUDE, CREATE_AND_WAIT, UPLOAD, ...stepScripts.map(buildStepCall), DOWNLOAD, DELETE, ""].join("\n");
}

/** The pieces of the transfer baseline, each its own script so each can be timed alone ($POD given). */
export function buildPlainTransferScripts(stepScript: string): {
  create: string;
  upload: string;
  step: string;
  download: string;
  remove: string;
} {
  const withPod = (body: string) => [PRELUDE, 'pod="$POD"', body, ""].join("\n");
  return {
    create: [PRELUDE, CREATE_AND_WAIT, 'printf "%s\\n" "$pod"', ""].join("\n"),
    upload: withPod(UPLOAD),
    step: withPod(buildStepCall(stepScript)),
    download: withPod(DOWNLOAD),
    remove: [PRELUDE, DELETE, ""].join("\n"),
  };
}
