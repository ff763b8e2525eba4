// Tops a namespace up to N warm placeholders, never past --max-warm: idempotent, and safe to run twice at once (slots are names).
import { formatDuration } from "../core/duration.js";
import { AlreadyExistsError, ClusterError, ConfigError, ForbiddenError, UnavailableError } from "../cluster/errors.js";
import { describeError, InfraError, InputError } from "../core/errors.js";
import { buildPlaceholderSelector } from "../manifests/labels.js";
import type { PodSpecConfig } from "../manifests/pod-spec-config.js";
import { buildPlaceholderManifest } from "../manifests/placeholder-manifest.js";
import { runWarmCall, type WarmDeps } from "./warm-deps.js";
import { coversRequest, isLive, listFreeSlotNames, readPlaceholders, type Placeholder } from "./placeholder.js";

export interface WarmSpec {
  /** How many placeholders of this size the namespace should have. */
  readonly count: number;
  /** The most placeholders the namespace may have, of any size: names are taken from slots 0 to maxWarm-1. */
  readonly maxWarm: number;
  /** How long each new one holds its node (its activeDeadlineSeconds). */
  readonly seconds: number;
  readonly cpu: string;
  readonly memory: string;
  readonly image: string;
  /** The runs' pod keys (settings.pod): placement, pull secrets, labels, security profile (PlaceholderManifestInput.pod). */
  readonly pod?: PodSpecConfig;
  /**
   * Only placeholders that last at least this long from now count toward `count`; when no slot is free, the one that
   * ends first is replaced (claimed, then made anew for `seconds`). `run --keep-warm` uses it; default 0: any live one counts.
   */
  readonly freshForMs?: number;
}

export interface WarmReport {
  /** Names of the placeholders made now. */
  readonly created: readonly string[];
  /** Names of placeholders that ended sooner and were replaced by new ones of the same name. */
  readonly replaced: readonly string[];
  /** Placeholders that were there already and count toward `count`. */
  readonly present: readonly Placeholder[];
  /** Slots another caller filled at the same moment (AlreadyExists): counted, not made. */
  readonly raced: readonly string[];
  /** How many `count` asked for that --max-warm left no room for. */
  readonly short: number;
  /** One sentence for people. */
  readonly detail: string;
}

/** Lists the namespace's placeholders; InputError when the transport cannot use the kubeconfig, InfraError otherwise. */
export async function listPlaceholders(deps: WarmDeps): Promise<Placeholder[]> {
  try {
    const jobs = await runWarmCall(deps, (options) =>
      deps.cluster.listJobs(deps.target.namespace, buildPlaceholderSelector(), options),
    );
    return readPlaceholders(jobs, (deps.now ?? Date.now)());
  } catch (error) {
    throw classifyWarmFailure("could not list the warm placeholders", error);
  }
}

/** The typed error of a failed warm-capacity call (anything not a ClusterError, a CancelledError say, passes as it is). */
export function classifyWarmFailure(what: string, error: unknown): Error {
  if (!(error instanceof ClusterError)) return error instanceof Error ? error : new Error(String(error));
  if (error instanceof ConfigError) return new InputError(`kubectl cannot use the kubeconfig: ${error.message}`);
  const unreachable =
    (error instanceof UnavailableError && error.reason === "unreachable") || error instanceof ForbiddenError;
  return new InfraError(unreachable ? "cluster-unreachable" : "create-failed", `${what}: ${describeError(error)}`);
}

/** Deletes a placeholder if it is still the one listed; whether it went. */
async function claimSlot(deps: WarmDeps, placeholder: Placeholder): Promise<boolean> {
  const preconditions = { uid: placeholder.uid, resourceVersion: placeholder.resourceVersion };
  try {
    return (
      (await runWarmCall(deps, (options) =>
        deps.cluster.deleteJob(placeholder.namespace, placeholder.name, { ...options, preconditions }),
      )) === "deleted"
    );
  } catch (error) {
    if (error instanceof ClusterError) return false;
    throw error;
  }
}

/** Creates one placeholder by name: "created", or "raced" when another caller made that slot first. */
async function createSlot(deps: WarmDeps, spec: WarmSpec, name: string): Promise<"created" | "raced"> {
  const { target } = deps;
  const manifest = buildPlaceholderManifest({
    name,
    ...(target.namespaceFromContext || target.namespace === undefined ? {} : { namespace: target.namespace }),
    image: spec.image,
    cpu: spec.cpu,
    memory: spec.memory,
    seconds: spec.seconds,
    ...(spec.pod ? { pod: spec.pod } : {}),
  });
  try {
    await runWarmCall(deps, (options) =>
      deps.cluster.createJob(target.namespaceFromContext ? undefined : target.namespace, manifest, options),
    );
    return "created";
  } catch (error) {
    if (error instanceof AlreadyExistsError) return "raced";
    throw classifyWarmFailure(`could not create placeholder ${name}`, error);
  }
}

/**
 * Makes sure the namespace has `count` live placeholders covering `cpu`/`memory`, creating the missing ones in free
 * slots (finished ones in a slot are cleared first), never more than `maxWarm` live ones in all. Two callers at once
 * fill the same slot names, so one of them gets AlreadyExists and nothing is duplicated. Throws InputError or InfraError.
 */
export async function topUpPlaceholders(deps: WarmDeps, spec: WarmSpec): Promise<WarmReport> {
  const now = (deps.now ?? Date.now)();
  const placeholders = await listPlaceholders(deps);
  const live = placeholders.filter(isLive);
  const fits = live.filter((p) => coversRequest(p, spec));
  const present = fits.filter((p) => p.remainingMs >= (spec.freshForMs ?? 0));
  const wanted = Math.max(0, spec.count - present.length);
  let room = Math.max(0, spec.maxWarm - live.length);
  const free = listFreeSlotNames(placeholders, spec.maxWarm);
  const slotNames = new Set(listFreeSlotNames([], spec.maxWarm));
  const stale = placeholders.filter(
    (p) => !isLive(p) && p.state !== "deleting" && slotNames.has(p.name) && !free.includes(p.name),
  );
  const created: string[] = [];
  const raced: string[] = [];
  const replaced: string[] = [];
  const made = (): number => created.length + raced.length;

  while (made() < wanted && room > 0) {
    let name = free.shift();
    while (name === undefined && stale.length > 0) {
      const old = stale.shift()!;
      if (await claimSlot(deps, old)) name = old.name;
    }
    if (name === undefined) break;
    if ((await createSlot(deps, spec, name)) === "created") created.push(name);
    else raced.push(name);
    room -= 1;
  }
  // No room left: replace what would end sooner than asked, soonest first (a run that claims it meanwhile wins).
  const shorter = spec.freshForMs
    ? fits.filter((p) => !present.includes(p) && slotNames.has(p.name)).sort((a, b) => a.expiresAt - b.expiresAt)
    : [];
  while (made() < wanted && shorter.length > 0) {
    const old = shorter.shift()!;
    if (!(await claimSlot(deps, old))) continue;
    if ((await createSlot(deps, spec, old.name)) === "created") {
      created.push(old.name);
      replaced.push(old.name);
    } else raced.push(old.name);
  }
  const short = Math.max(0, wanted - made());
  return {
    created,
    replaced,
    present,
    raced,
    short,
    detail: describeTopUp(spec, present, created, replaced, raced, short, now),
  };
}

function describeTopUp(
  spec: WarmSpec,
  present: readonly Placeholder[],
  created: readonly string[],
  replaced: readonly string[],
  raced: readonly string[],
  short: number,
  now: number,
): string {
  const parts: string[] = [];
  const size = `${spec.cpu} cpu, ${spec.memory}, for ${formatDuration(spec.seconds * 1000)}`;
  const fresh = created.filter((name) => !replaced.includes(name));
  if (fresh.length > 0) parts.push(`created ${fresh.join(", ")} (${size})`);
  if (replaced.length > 0) parts.push(`replaced ${replaced.join(", ")}, which would have ended sooner (${size})`);
  if (present.length > 0)
    parts.push(
      `already there: ${present.map((p) => `${p.name} (${formatDuration(Math.max(0, p.expiresAt - now))} left)`).join(", ")}`,
    );
  if (raced.length > 0) parts.push(`made at the same moment by another caller: ${raced.join(", ")}`);
  if (short > 0) parts.push(`${short} not made: --max-warm ${spec.maxWarm} placeholder(s) are there already`);
  return `${present.length + created.length + raced.length} of ${spec.count} warm placeholder(s): ${parts.join("; ") || "none"}`;
}
