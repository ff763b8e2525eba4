// Hands the run's secrets to the pod over one exec's stdin, into its memory-backed volume, checked by a receipt.
import { randomBytes } from "node:crypto";
import { InfraError } from "../../core/errors.js";
import { isExecSuccess } from "../../cluster/exec.js";
import { runExec } from "../../cluster/run-exec.js";
import { helperCommand } from "../../pod/helper-script.js";
import { buildSecretsPayload, checkSecretsReply } from "../../pod/secrets-payload.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { withExecRetry } from "./exec-retry.js";

/** What the pod confirmed: how many secrets, by name (names are not secret), and the bytes that carried them. */
export interface SecretsSummary {
  readonly names: readonly string[];
  readonly bytes: number;
}

/**
 * Writes the secrets into /knotless-secrets/env in the pod (after the upload: the helper is there by then). The
 * exec's argv names no secret; the values exist only in this process's memory and on the exec's stdin. The pod
 * installs them only when the stream ended with this attempt's receipt and reports the bytes it received; anything
 * else (a cut stream) is an infrastructure failure, never a step without its secrets.
 */
export async function deliverSecrets(ctx: ExecutorContext, pod: RunPod): Promise<SecretsSummary> {
  const secrets = ctx.settings.secrets ?? [];
  return withExecRetry(ctx, pod, "secrets", "exec-failed", async () => {
    const payload = buildSecretsPayload(secrets, randomBytes(8).toString("hex"));
    const { end, stdout } = await runExec(
      ctx.cluster,
      buildPodExec(ctx, pod.name, helperCommand.takeSecrets()),
      payload.text,
    );
    if (!isExecSuccess(end)) return { ok: false, end };
    const mismatch = checkSecretsReply(payload, stdout);
    if (mismatch !== undefined)
      throw new InfraError("integrity-mismatch", `secrets delivery check failed: ${mismatch}`);
    return { ok: true, value: { names: secrets.map((secret) => secret.name), bytes: payload.bytes } };
  });
}

/**
 * Removes the secrets file from the pod, for a Job the run keeps (pack-outputs removes it on the normal path).
 * Best effort and bounded: resolves with undefined when the pod confirmed, else with why not.
 */
export async function forgetSecrets(
  ctx: Pick<ExecutorContext, "settings" | "cluster">,
  pod: RunPod,
  timeoutMs: number,
): Promise<string | undefined> {
  const { end } = await runExec(
    ctx.cluster,
    buildPodExec(
      { settings: ctx.settings, signal: AbortSignal.timeout(timeoutMs) },
      pod.name,
      helperCommand.forgetSecrets(),
    ),
  );
  return isExecSuccess(end) ? undefined : end.how;
}
