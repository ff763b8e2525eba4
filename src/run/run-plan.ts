// A run's plan: its settings without any secret value, as text a restarted or adopting runner continues it from.
import { InputError } from "../core/errors.js";
import type { RunSettings } from "../executor/kubernetes/context.js";

/** What a run needs to be continued by another process (never a secret: their values are read back from the pod). */
export interface RunPlan {
  readonly version: 1;
  /** The run's settings with `secrets` empty: JSON-safe, no value of a secret anywhere in it. */
  readonly settings: RunSettings;
  /** The names of the run's secrets, in order. */
  readonly secretNames: readonly string[];
}

/**
 * The plan of `settings` as JSON text: every field but the secrets' values (their names are kept) and this host's
 * own tools (the host tar's and git's environment: the process's, which may hold anything), which the process that
 * continues the run supplies (settingsFromPlan).
 */
export function serializeRunPlan(settings: RunSettings): string {
  const { secrets, hostTar: _hostTar, gitCheckout, ...rest } = settings;
  const checkout = gitCheckout ? (({ host: _host, ...spec }) => spec)(gitCheckout) : undefined;
  const plan: RunPlan = {
    version: 1,
    settings: { ...rest, ...(checkout ? { gitCheckout: checkout } : {}) },
    secretNames: (secrets ?? []).map((secret) => secret.name),
  };
  return JSON.stringify(plan);
}

/** Reads serializeRunPlan's text back; throws InputError for text that is not a plan of this version. */
export function readRunPlan(text: string): RunPlan {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError(`the run's plan is not JSON: ${(error as Error).message}`);
  }
  const plan = parsed as Partial<RunPlan> | null;
  if (plan === null || typeof plan !== "object" || plan.version !== 1)
    throw new InputError("the run's plan is not a plan of version 1 (written by another runner version?)");
  const settings = plan.settings as Partial<RunSettings> | undefined;
  if (
    settings === undefined ||
    typeof settings.runId !== "string" ||
    typeof settings.jobName !== "string" ||
    !Array.isArray(settings.steps) ||
    !Array.isArray(plan.secretNames)
  )
    throw new InputError("the run's plan lacks its run id, Job name, steps or secret names");
  return { version: 1, settings: settings as RunSettings, secretNames: plan.secretNames };
}

/**
 * The settings to continue a run with: the plan's, with the secrets read back from its pod (by name; a secret the
 * pod no longer holds is left out, which masks nothing of it).
 */
export function settingsFromPlan(
  plan: RunPlan,
  secrets: ReadonlyArray<{ readonly name: string; readonly value: string }>,
  local: Pick<RunSettings, "hostTar"> & { readonly git?: NonNullable<RunSettings["gitCheckout"]>["host"] } = {},
): RunSettings {
  const byName = new Map(secrets.map((secret) => [secret.name, secret.value]));
  const known = plan.secretNames.flatMap((name) => {
    const value = byName.get(name);
    return value === undefined ? [] : [{ name, value }];
  });
  const { gitCheckout } = plan.settings;
  return {
    ...plan.settings,
    ...(plan.secretNames.length > 0 ? { secrets: known } : {}),
    ...(local.hostTar ? { hostTar: local.hostTar } : {}),
    ...(gitCheckout && local.git ? { gitCheckout: { ...gitCheckout, host: local.git } } : {}),
  };
}
