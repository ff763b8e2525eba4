// The `serve` command's options, declared once, and their resolution into a checked ServeCommand (bad input refused before anything listens or calls a cluster).
import { readFileSync, realpathSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { readDuration } from "../core/duration.js";
import { readSize } from "../core/patterns.js";
import { InputError } from "../core/errors.js";
import { describeSetting, type RunnerConfigSource } from "../config/runner-config.js";
import { checkInstanceName } from "../manifests/instance-lease.js";
import type { FollowerSettings } from "../serve/follower-budget.js";
import type { ServeCommand } from "../serve/start-service.js";
import { readCacheFlags, type RawCacheOptions } from "./cache-options.js";
import { CLUSTER_OPTIONS, resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import { readHeartbeatInterval } from "./heartbeat-interval.js";
import { readPodIdleTimeout } from "./pod-idle-timeout.js";
import type { OptionSpec } from "./option-spec.js";
import { resolveProcessIdentity } from "./process-identity.js";
import { readKeepWarm } from "./warm-options.js";
import { applyPodFlags, POD_OPTIONS, type RawPodOptions } from "./pod-options.js";
import { matchImagePattern } from "../settings/apply-limits.js";
import { normalizeNixeryBase } from "../settings/resolve-workflow.js";
import { readRunnerConfig } from "../config/read-runner-config.js";
import { readTokenFile } from "../serve/bearer-auth.js";
import { checkListenSecurity, readListenAddress } from "../serve/listen-address.js";

export const SERVE_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--listen <host:port>",
    description:
      "where to accept requests; an address other than loopback needs --tls-cert/--tls-key or --insecure-listen",
    defaultValue: "127.0.0.1:7300",
  },
  {
    flag: "--state-dir <dir>",
    description: "the service's state: runner.sqlite and each run's files under runs/<runId>/",
    required: true,
  },
  {
    flag: "--token-file <file>",
    description: "the bearer token every request must carry (the file must be readable by its owner only)",
    required: true,
  },
  {
    flag: "--max-runs <n>",
    description: "most runs at once; the rest wait as pending in submission order",
    defaultValue: "20",
  },
  {
    flag: "--max-runs-per-repo <n>",
    description:
      "most runs at once of one repository (the trigger's repo), so one busy repository cannot starve the others",
  },
  {
    flag: "--max-queued <n>",
    description: "most runs waiting; a submission past it is refused with 429",
    defaultValue: "1000",
  },
  {
    flag: "--drain-timeout <duration>",
    description:
      "on SIGTERM, how long running runs may finish before they are cancelled (a second SIGTERM exits at once)",
    defaultValue: "10m",
  },
  {
    flag: "--drain-cleanup-timeout <duration>",
    description:
      "on SIGTERM, how long cancelled runs may take to end and delete their Jobs before the service deletes their Jobs itself and exits, naming them",
    defaultValue: "1m",
  },
  {
    flag: "--keep-runs <duration>",
    description: "how long finished runs (records and files) are kept (at most 168h)",
    defaultValue: "168h",
  },
  {
    flag: "--gc-interval <duration>",
    description: "how often the service runs gc on its namespace",
    defaultValue: "5m",
  },
  {
    flag: "--instance <name>",
    description:
      "this service's name among several sharing a namespace: its Lease and the owner of its runs (a DNS-1123 label; default the host name's first label)",
  },
  {
    flag: "--lease-duration <duration>",
    description:
      "how long this instance's Lease holds unrenewed (whole seconds; renewed every third of it): an instance with --adopt takes over this one's runs once it has passed",
    defaultValue: "15s",
  },
  {
    flag: "--adopt",
    description: "take over the unfinished runs of instances whose Lease has expired (their host died) and finish them",
  },
  { flag: "--tls-cert <file>", description: "PEM certificate: serve HTTPS (with --tls-key)" },
  { flag: "--tls-key <file>", description: "PEM private key of --tls-cert" },
  {
    flag: "--insecure-listen",
    description: "allow a non-loopback --listen without TLS (the token crosses the network in clear)",
  },
  { flag: "--metrics-without-token", description: "answer /metrics without the bearer token" },
  {
    flag: "--max-request-bytes <size>",
    description: "largest JSON request body taken (413 past it)",
    defaultValue: "4Mi",
  },
  {
    flag: "--max-workflow-bytes <size>",
    description: "largest workflow text taken (413 past it)",
    defaultValue: "256Ki",
  },
  {
    flag: "--pod-timeout <duration>",
    description: "how long a run's pod may stay Pending (default 15m)",
    defaultValue: "15m",
  },
  {
    flag: "--pod-idle-timeout <duration>",
    description:
      "each run's pod stops itself after this long without a runner exec, e.g. once serve died (default 10m, at least 15s)",
  },
  {
    flag: "--max-output-bytes <size>",
    description: "most bytes taken back from each run's /outputs",
    defaultValue: "512Mi",
  },
  { flag: "--max-log-bytes <size>", description: "most bytes of step output each run keeps", defaultValue: "16Mi" },
  {
    flag: "--follower-stall-timeout <duration>",
    description:
      "a /logs or /events follower that takes nothing of what is sent to it for this long is dropped, told why",
    defaultValue: "30s",
  },
  {
    flag: "--follower-buffer <size>",
    description: "most bytes buffered for one /logs or /events follower; past it the follower's stream waits for it",
    defaultValue: "256Ki",
  },
  {
    flag: "--all-followers-buffer <size>",
    description: "most bytes buffered for all followers together; past it every stream waits",
    defaultValue: "64Mi",
  },
  {
    flag: "--keep-warm <duration>",
    description: "after each run's Job is deleted, leave a placeholder that keeps its node for this long",
  },
  {
    flag: "--max-warm <n>",
    description: "most warm placeholders in the namespace, for --keep-warm",
    defaultValue: "1",
  },
  { flag: "--skip-warm", description: "do not look for a warm placeholder to claim" },
  { flag: "--nixery <url>", description: "the Nixery registry that composes the image of a nixery workflow" },
  {
    flag: "--cache-dir <dir>",
    description:
      "the host directory that keeps the workflows' caches, per repository (default $XDG_CACHE_HOME/knotless-runner-k8s, else ~/.cache/knotless-runner-k8s)",
  },
  { flag: "--cache-max-bytes <size>", description: "most bytes the cache store keeps (default 5Gi)" },
  {
    flag: "--cache-pvc <name>",
    description: "keep the caches on this PersistentVolumeClaim in the namespace instead of --cache-dir",
  },
  { flag: "--no-cache", description: "restore and save no cache" },
  {
    flag: "--config <file>",
    description:
      "the runner configuration (YAML) every served workflow is held to, as run's --config: limits, microvm images, allowPrivileged, the pod's settings",
  },
  ...POD_OPTIONS,
  {
    flag: "--checkout-root <dir>",
    description:
      "the host directory under which a submission's checkout.dir and sharedSteps.dir may name a directory (symlinks resolved; none outside it); without it, neither is taken",
  },
  {
    flag: "--allow-http-git",
    description:
      "take checkout.git URLs over plain http:// as well as https:// (file://, paths, ssh:// and git:// are never taken)",
  },
  {
    flag: "--git <path>",
    description:
      "the git binary that clones a submission's checkout.git on this host when the run's image has no git (default: git on PATH)",
  },
  // serve holds many runs in one process: the API spoken in-process (one connection pool and one watch for all of
  // them) is its default, where a kubectl process per call would cost ~99 MiB a run.
  ...CLUSTER_OPTIONS.map((option) =>
    option.flag.startsWith("--transport ")
      ? {
          ...option,
          description:
            "how to talk to the cluster: api (default: the Kubernetes API spoken in-process) or kubectl (one kubectl process per call)",
        }
      : option,
  ),
];

/** Options exactly as the CLI parser hands them over. */
export interface RawServeOptions extends RawClusterOptions, RawCacheOptions, RawPodOptions {
  listen: string;
  stateDir?: string;
  tokenFile?: string;
  maxRuns: string;
  maxRunsPerRepo?: string;
  maxQueued: string;
  drainTimeout: string;
  drainCleanupTimeout: string;
  keepRuns: string;
  gcInterval: string;
  instance?: string;
  leaseDuration: string;
  adopt?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  insecureListen?: boolean;
  metricsWithoutToken?: boolean;
  maxRequestBytes: string;
  maxWorkflowBytes: string;
  podTimeout: string;
  podIdleTimeout?: string;
  maxOutputBytes: string;
  maxLogBytes: string;
  followerStallTimeout: string;
  followerBuffer: string;
  allFollowersBuffer: string;
  keepWarm?: string;
  maxWarm: string;
  skipWarm?: boolean;
  nixery?: string;
  git?: string;
  config?: string;
  checkoutRoot?: string;
  allowHttpGit?: boolean;
}

function readCount(text: string, flag: string, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > max)
    throw new InputError(`${flag} expects a whole number from 1 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

function readFileFor(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new InputError(
      `${flag}: cannot read ${resolve(path)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
}

/** The real path of --checkout-root: what every checkout.dir is held inside. */
function readCheckoutRoot(dir: string): string {
  try {
    const real = realpathSync(dir);
    if (statSync(real).isDirectory()) return real;
  } catch {
    // told below, as for a file
  }
  throw new InputError(`--checkout-root: ${resolve(dir)} is not a directory`);
}

/** Validates every option; throws InputError naming the flag. Reads the token and TLS files; listens on nothing, calls no cluster. */
export async function resolveServeCommand(
  raw: RawServeOptions,
  env: NodeJS.ProcessEnv,
): Promise<ServeCommand & { readonly drainTimeoutMs: number; readonly drainCleanupTimeoutMs: number }> {
  if (!raw.stateDir) throw new InputError("missing required option --state-dir");
  if (!raw.tokenFile) throw new InputError("missing required option --token-file");
  const listen = readListenAddress(raw.listen);
  if ((raw.tlsCert === undefined) !== (raw.tlsKey === undefined))
    throw new InputError("--tls-cert and --tls-key go together");
  checkListenSecurity(listen, raw.tlsCert !== undefined, raw.insecureListen ?? false);
  const token = readTokenFile(resolve(raw.tokenFile));
  const tls =
    raw.tlsCert !== undefined && raw.tlsKey !== undefined
      ? { cert: readFileFor(raw.tlsCert, "--tls-cert"), key: readFileFor(raw.tlsKey, "--tls-key") }
      : undefined;
  const cluster = resolveClusterOptions({ ...raw, transport: raw.transport ?? "api" }, env);
  const heartbeatIntervalMs = readHeartbeatInterval(env);
  const maxRuns = readCount(raw.maxRuns, "--max-runs", 1000);
  // Read once at start: a bad file refuses to start (exit 2, file:line:column), and every run is held to the same one.
  const runner = applyPodFlags(await readRunnerConfig(raw.config === undefined ? undefined : resolve(raw.config)), raw);
  if (raw.nixery !== undefined) await checkNixeryAllowed(raw.nixery, runner);
  return {
    listen,
    stateDir: resolve(raw.stateDir),
    token,
    tokenFile: resolve(raw.tokenFile),
    ...(tls ? { tls } : {}),
    metricsWithoutToken: raw.metricsWithoutToken ?? false,
    limits: {
      maxRuns,
      ...(raw.maxRunsPerRepo !== undefined
        ? { maxRunsPerRepo: readCount(raw.maxRunsPerRepo, "--max-runs-per-repo", maxRuns) }
        : {}),
      maxQueued: readCount(raw.maxQueued, "--max-queued", 1_000_000),
      maxWorkflowBytes: readSize(raw.maxWorkflowBytes, "--max-workflow-bytes"),
      maxSecrets: 256,
      maxSecretBytes: 1 << 20,
    },
    maxBodyBytes: readSize(raw.maxRequestBytes, "--max-request-bytes"),
    keepRunsMs: readDuration(raw.keepRuns, "--keep-runs"),
    gcIntervalMs: readDuration(raw.gcInterval, "--gc-interval"),
    // As `gc`'s default: four missed refreshes of the heartbeat, and never under two intervals.
    gcStaleAfterMs: Math.max(120_000, 4 * heartbeatIntervalMs),
    drainTimeoutMs: readDuration(raw.drainTimeout, "--drain-timeout"),
    drainCleanupTimeoutMs: readDuration(raw.drainCleanupTimeout, "--drain-cleanup-timeout"),
    defaults: {
      target: cluster.target,
      podTimeoutMs: readDuration(raw.podTimeout, "--pod-timeout"),
      podIdleTimeoutMs: readPodIdleTimeout(raw.podIdleTimeout),
      maxOutputBytes: readSize(raw.maxOutputBytes, "--max-output-bytes"),
      maxLogBytes: readSize(raw.maxLogBytes, "--max-log-bytes"),
      ...readKeepWarm(raw.keepWarm, raw.maxWarm),
      ...(raw.skipWarm ? { claimWarm: false } : {}),
      ...(env.KNOTLESS_TAR === "none" ? {} : { hostTar: { binary: env.KNOTLESS_TAR || "tar", env } }),
      owner: resolveProcessIdentity(),
      ...(raw.nixery !== undefined ? { nixery: raw.nixery } : {}),
      git: { binary: raw.git ?? "git", env },
      ...(raw.checkoutRoot !== undefined ? { checkoutRoot: readCheckoutRoot(raw.checkoutRoot) } : {}),
      ...(raw.allowHttpGit ? { allowHttpGit: true } : {}),
      runner,
      caches: readCacheFlags(raw, env),
    },
    transport: {
      setting: { target: cluster.target, kubectlPath: cluster.kubectlPath, transport: cluster.transport },
      env,
    },
    timings: { heartbeatIntervalMs },
    followers: readFollowerSettings(raw),
    instance: {
      name: readInstanceName(raw.instance, hostname()),
      leaseDurationSeconds: readLeaseDuration(raw.leaseDuration),
      adopt: raw.adopt ?? false,
    },
  };
}

/** --instance, or the host name's first label lowercased; either must be a DNS-1123 label (its Lease's name and a label value). */
export function readInstanceName(given: string | undefined, host: string): string {
  const name = given ?? host.split(".")[0]!.toLowerCase();
  const why = checkInstanceName(name);
  if (why === undefined) return name;
  throw new InputError(
    given === undefined
      ? `the host name ${JSON.stringify(host)} cannot name this instance (${why}): give --instance NAME`
      : `--instance ${JSON.stringify(given)} ${why}`,
  );
}

/** --lease-duration: whole seconds (a Lease says its duration in seconds), from 1s to 1h. */
export function readLeaseDuration(text: string): number {
  const ms = readDuration(text, "--lease-duration");
  if (ms % 1000 !== 0 || ms < 1000 || ms > 3_600_000)
    throw new InputError(`--lease-duration expects whole seconds from 1s to 1h, got ${JSON.stringify(text)}`);
  return ms / 1000;
}

/** The bounds on stream followers: a stall timeout of at least 100ms, a follower's buffer of at least 4Ki, all followers' at least one follower's. */
function readFollowerSettings(raw: RawServeOptions): FollowerSettings {
  const stallTimeoutMs = readDuration(raw.followerStallTimeout, "--follower-stall-timeout");
  if (stallTimeoutMs < 100)
    throw new InputError(
      `--follower-stall-timeout expects at least 100ms, got ${JSON.stringify(raw.followerStallTimeout)}`,
    );
  const maxBufferedBytes = readSize(raw.followerBuffer, "--follower-buffer");
  if (maxBufferedBytes < 4096)
    throw new InputError(`--follower-buffer expects at least 4Ki, got ${JSON.stringify(raw.followerBuffer)}`);
  const maxTotalBufferedBytes = readSize(raw.allFollowersBuffer, "--all-followers-buffer");
  if (maxTotalBufferedBytes < maxBufferedBytes)
    throw new InputError(
      `--all-followers-buffer (${raw.allFollowersBuffer}) must be at least --follower-buffer (${raw.followerBuffer})`,
    );
  return { stallTimeoutMs, maxBufferedBytes, maxTotalBufferedBytes };
}

/** Refuses at start a --nixery that `limits.nixery` does not allow: every nixery workflow submitted would be refused for it. */
async function checkNixeryAllowed(nixery: string, runner: RunnerConfigSource): Promise<void> {
  const allowed = runner.config.limits.nixery;
  const base = normalizeNixeryBase(nixery);
  if (base === undefined)
    throw new InputError(
      `--nixery expects a registry host such as nixery.dev or registry.example:5000/nixery, got ${JSON.stringify(nixery)}`,
    );
  if (allowed !== undefined && !allowed.some((pattern) => matchImagePattern(pattern, base))) {
    throw new InputError(
      `--nixery ${base} matches none of the registries ${describeSetting(runner, "limits.nixery")} allows (${allowed.join(", ")})`,
    );
  }
}
