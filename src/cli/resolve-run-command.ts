// Turns raw command-line options into the run's typed configuration, refusing bad input before any cluster call.
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdtempSync, readdirSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readDuration } from "../core/duration.js";
import { readSize } from "../core/patterns.js";
import { InputError } from "../core/errors.js";
import type { HostTarSetting } from "../transfer/host-tar.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { parseStepsFile, type StepSpec } from "../workflow/steps-file.js";
import { FLAG_NAMES, holdOverrides, type HeldOverrides } from "../settings/hold-overrides.js";
import { prepareWorkflowRun, type PreparedRun } from "../settings/prepare-workflow-run.js";
import type { Secret } from "../secrets/secret.js";
import { loadWorkflowFile, type LoadedWorkflow } from "../settings/load-workflow.js";
import { readRunnerConfig } from "../config/read-runner-config.js";
import { mergeSecrets, readSecretsFile, readSecretsFromEnv } from "../secrets/read-secrets.js";
import { checkGitSource } from "../transfer/git-checkout.js";
import { readResumeFiles } from "../run/resume-files.js";
import type { RunnerConfigSource } from "../config/runner-config.js";
import type { Trigger } from "../workflow/match-trigger.js";
import { readOverrides } from "../settings/read-overrides.js";
import { readTrigger, TRIGGER_TEXT_KEYS, type TriggerNames } from "../settings/read-trigger.js";
import { MAX_WORKFLOW_FILE_BYTES } from "../workflow/read-workflow-file.js";
import { readBoundedFile, readBoundedTextFile } from "../core/read-bounded-file.js";
import type { ExecutorTimings } from "../executor/kubernetes/context.js";
import { isAcceptableRunId } from "../manifests/names.js";
import { buildRunSettings } from "../settings/build-run-settings.js";
import {
  buildCacheBackend,
  readCacheFlags,
  resolveCacheRepo,
  type CacheFlags,
  type CacheRepoSource,
  type RawCacheOptions,
} from "./cache-options.js";
import {
  checkKubeconfigReadable,
  resolveClusterOptions,
  resolveTransport,
  type RawClusterOptions,
  type TransportName,
} from "./cluster-options.js";
import { readExecutorTimings } from "./executor-timings.js";
import { settingsFromPlan, type RunPlan } from "../run/run-plan.js";
import type { RunCheckpoint } from "../run/run-checkpoint.js";
import { readPodIdleTimeout } from "./pod-idle-timeout.js";
import { listKubeconfigFiles, readContextNamespace } from "../cluster/kubeconfig-namespace.js";
import { resolveProcessIdentity } from "./process-identity.js";
import { readKeepWarm } from "./warm-options.js";
import { applyPodFlags, findPodFlag, type RawPodOptions } from "./pod-options.js";
import { formatWarning } from "../workflow/workflow-errors.js";

/** Options exactly as the CLI parser hands them over (strings, unvalidated). */
export interface RawRunOptions extends RawClusterOptions, RawCacheOptions, RawPodOptions {
  /** `run --resume DIR`: the --out directory of a killed run to re-attach to. */
  resume?: string;
  checkout?: string;
  steps?: string;
  workflow?: string;
  out?: string;
  sharedSteps?: string;
  image?: string;
  event?: string;
  ref?: string;
  branch?: string;
  tag?: string;
  sha?: string;
  repo?: string;
  changedFile?: string[];
  changedFiles?: string;
  prAction?: string;
  prSourceBranch?: string;
  prSourceSha?: string;
  knot?: string;
  repoDid?: string;
  repoName?: string;
  defaultBranch?: string;
  repoUrl?: string;
  pipelineId?: string;
  checkoutGit?: string;
  checkoutSha?: string;
  config?: string;
  nixery?: string;
  secrets?: string;
  secretEnv?: string[];
  runId?: string;
  timeout?: string;
  stepTimeout?: string;
  podTimeout?: string;
  podIdleTimeout?: string;
  cpu?: string;
  memory?: string;
  maxOutputBytes?: string;
  maxLogBytes?: string;
  keep?: boolean;
  keepWarm?: string;
  maxWarm?: string;
  skipWarm?: boolean;
  dryRun?: boolean;
  verbose?: boolean;
}

export interface RunCommand {
  readonly settings: RunSettings & { readonly maxLogBytes: number };
  readonly kubectlPath: string;
  /** --transport: how the run talks to the cluster. */
  readonly transport: TransportName;
  readonly dryRun: boolean;
  readonly verbose: boolean;
  /** The workflow's `when` did not match the trigger: the run writes a skipped result and touches no cluster. */
  readonly notMatched?: { readonly reason: string };
  /** A temporary empty directory standing in for the checkout of a workflow that skips it; the CLI removes it. */
  readonly emptyCheckout?: string;
  /** No --checkout was given (the workflow's clone.skip). */
  readonly skipsCheckout?: boolean;
  /** Worth telling the operator before the run (a workflow's warnings, a secrets file others can read). */
  readonly warnings: readonly string[];
  /** What the runner configuration's `limits` clamped (also in `warnings`): the run logs each as a warning notice. */
  readonly clamped: readonly string[];
  /** Timings the environment changes (the heartbeat interval, KNOTLESS_EXECUTOR_TIMINGS); the rest are the defaults. */
  readonly timings: Partial<ExecutorTimings>;
  /**
   * Present when the workflow declares caches: how many, whether --no-cache turned them off, and where the
   * repository key (settings.cacheBackend.repo) came from. The rendered caches are settings.caches.
   */
  readonly caches?: { readonly declared: number; readonly off: boolean; readonly repoFrom: CacheRepoSource };
}

function requireOption(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new InputError(`missing required option ${flag}`);
  return value;
}

function requireDirectory(path: string, flag: string): string {
  const absolute = resolve(path);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
    accessSync(absolute, constants.R_OK | constants.X_OK);
  } catch {
    throw new InputError(`${flag}: expected a readable directory, found none at ${absolute}`);
  }
  if (!isDirectory) throw new InputError(`${flag}: expected a directory, found a file at ${absolute}`);
  return absolute;
}

function checkOutDir(path: string): string {
  const absolute = resolve(path);
  let entries: string[] = [];
  try {
    if (!statSync(absolute).isDirectory())
      throw new InputError(`--out: expected a directory, found a file at ${absolute}`);
    entries = readdirSync(`${absolute}/outputs`);
  } catch (error) {
    if (error instanceof InputError) throw error;
  }
  if (entries.length > 0)
    throw new InputError(
      `--out: ${absolute}/outputs already has files from an earlier run; choose a fresh --out directory`,
    );
  return absolute;
}

/** Generates a run id when none was given: sortable time plus randomness. */
export function generateRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${stamp}-${randomBytes(3).toString("hex")}`;
}

/** The kubeconfig context's namespace as kubectl would pick it, else "default"; InputError for a bad kubeconfig. */
async function readNamespaceForDryRun(raw: RawRunOptions, env: NodeJS.ProcessEnv): Promise<string> {
  const files = listKubeconfigFiles(raw.kubeconfig, env, homedir());
  return (await readContextNamespace(files, raw.context, raw.kubeconfig !== undefined)) ?? "default";
}

/** KNOTLESS_TAR names the host tar that packs the upload ("tar" on PATH by default); "none" keeps it to the runner's packer. */
function resolveHostTar(env: NodeJS.ProcessEnv): { hostTar?: HostTarSetting } {
  const value = env.KNOTLESS_TAR;
  if (value === "none") return {};
  return { hostTar: { binary: value === undefined || value === "" ? "tar" : value, env } };
}

/** Validates everything; throws InputError with the file, line and what was expected. Touches no cluster. */
/** The steps of the run and where they came from: a steps file, or a workflow file planned for its trigger. */
type StepsSource =
  | { readonly kind: "steps"; readonly steps: StepSpec[] }
  | {
      readonly kind: "workflow";
      readonly loaded: LoadedWorkflow;
      readonly trigger?: Trigger;
      readonly warnings: readonly string[];
      readonly clamped: readonly string[];
      readonly runner: RunnerConfigSource;
    };

function toFlag(key: string): string {
  return `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}

/** The largest `--changed-files` list read: 16 MiB is some 200,000 paths, more than any change a forge sends. */
const MAX_CHANGED_FILES_BYTES = 16 * 1024 * 1024;

/** --changed-file PATH (repeatable) and the lines of --changed-files FILE, in order; undefined when neither is given. */
function readChangedFiles(raw: RawRunOptions): string[] | undefined {
  if (raw.changedFile === undefined && raw.changedFiles === undefined) return undefined;
  const files = [...(raw.changedFile ?? [])];
  if (raw.changedFiles !== undefined) {
    const read = readBoundedTextFile(resolve(raw.changedFiles), {
      maxBytes: MAX_CHANGED_FILES_BYTES,
      what: "a list of changed files",
    });
    if (!read.ok)
      throw new InputError(
        `--changed-files: ${raw.changedFiles}${read.at ? `:${read.at.line}:${read.at.column}` : ""}: ${read.problem}`,
      );
    files.push(...read.text.split(/\r?\n/).filter((line) => line !== ""));
  }
  const bad = files.find((file) => file === "" || /[\x00-\x1f\x7f]/.test(file));
  if (bad !== undefined)
    throw new InputError(
      `--changed-file expects a path relative to the repository's root without control characters, got ${JSON.stringify(bad)}`,
    );
  return files;
}

/** The trigger flags as a Trigger; undefined without --event (then `when` is not evaluated). */
function readTriggerFlags(raw: RawRunOptions): Trigger | undefined {
  const fields = (["event", ...TRIGGER_TEXT_KEYS] as const).filter((key) => raw[key] !== undefined);
  const changedFiles = readChangedFiles(raw);
  return readTrigger(
    {
      ...Object.fromEntries(fields.map((key) => [key, raw[key]])),
      ...(changedFiles !== undefined ? { changedFiles } : {}),
    },
    TRIGGER_FLAG_NAMES,
  );
}

/** The trigger's fields as flags: `--changed-file` for the changed files (or `--changed-files FILE`). */
const TRIGGER_FLAG_NAMES: TriggerNames = {
  of: (key) => (key === "changedFiles" ? "--changed-file" : toFlag(key)),
  refAlternative: "or use --branch / --tag",
};

/** Reads the steps file or loads the workflow file (exactly one of --steps and --workflow). */
async function readStepsSource(raw: RawRunOptions): Promise<StepsSource> {
  if ((raw.steps === undefined) === (raw.workflow === undefined))
    throw new InputError("expected exactly one of --steps FILE and --workflow FILE");
  const trigger = readTriggerFlags(raw);
  if (raw.steps !== undefined) {
    if (trigger !== undefined)
      throw new InputError("--event and the other trigger flags go with --workflow (a steps file has no `when`)");
    if (raw.nixery !== undefined) throw new InputError("--nixery goes with --workflow (a steps file has no engine)");
    if (raw.config !== undefined)
      throw new InputError(
        "--config goes with --workflow (its settings are the engines' and a steps file has no engine)",
      );
    const podFlag = findPodFlag(raw);
    if (podFlag !== undefined) throw new InputError(`${podFlag} goes with --workflow (as --config does)`);
    const stepsFile = resolve(raw.steps);
    // Bytes: parsing refuses a line that is not UTF-8 rather than decoding it into U+FFFD.
    const read = readBoundedFile(stepsFile, { maxBytes: MAX_WORKFLOW_FILE_BYTES, what: "a steps file" });
    if (!read.ok) throw new InputError(read.problem, stepsFile);
    return { kind: "steps", steps: parseStepsFile(read.bytes, stepsFile) };
  }
  // Flags over the file over the defaults: the pod flags are laid over --config's `pod` before anything reads it.
  const runner = applyPodFlags(await readRunnerConfig(raw.config), raw);
  const loaded = await loadWorkflowFile(resolve(raw.workflow!), {
    name: raw.workflow!,
    runner,
    ...(raw.nixery !== undefined ? { nixeryBase: raw.nixery } : {}),
  });
  return {
    kind: "workflow",
    loaded,
    ...(trigger ? { trigger } : {}),
    warnings: loaded.warnings.map(formatWarning),
    clamped: loaded.resolved.clamped.map(formatWarning),
    runner,
  };
}

/** Plans the workflow's run: its caches rendered with the checkout's file hashes (none with --no-cache). */
async function planRun(
  source: Extract<StepsSource, { kind: "workflow" }>,
  runId: string,
  held: HeldOverrides,
  checkoutDir: string | undefined,
  cacheFlags: CacheFlags,
): Promise<PreparedRun> {
  return prepareWorkflowRun(source.loaded, {
    runId,
    ...(source.trigger ? { trigger: source.trigger } : {}),
    overrides: held.overrides,
    overrideClamps: held.clamps,
    ...(checkoutDir ? { checkoutDir } : {}),
    cachesOff: cacheFlags.off,
  });
}

/** --secrets FILE and every --secret-env NAME, merged (a name given twice is refused); warnings for a loose file mode. */
async function readRunSecrets(
  raw: RawRunOptions,
  env: NodeJS.ProcessEnv,
): Promise<{ secrets: Secret[]; warnings: string[] }> {
  if (raw.secrets === undefined && (raw.secretEnv ?? []).length === 0) return { secrets: [], warnings: [] };
  const sources: Array<{ from: string; secrets: Secret[] }> = [];
  const warnings: string[] = [];
  if (raw.secrets !== undefined) {
    const file = await readSecretsFile(resolve(raw.secrets));
    if (file.warning) warnings.push(file.warning);
    sources.push({ from: raw.secrets, secrets: file.secrets });
  }
  if ((raw.secretEnv ?? []).length > 0)
    sources.push({ from: "--secret-env", secrets: readSecretsFromEnv(raw.secretEnv ?? [], env) });
  return { secrets: mergeSecrets(sources), warnings };
}

/** An empty directory for a workflow that skips the checkout (`clone.skip`): /work starts empty. Removed by the CLI after the run. */
function makeEmptyCheckout(): string {
  return mkdtempSync(join(tmpdir(), "knotless-no-checkout-"));
}

/**
 * --checkout-git URL --checkout-sha SHA (both or neither, not with --checkout): the commit cloned in the pod when its
 * image has git, else on this host with `git` on PATH; depth and submodules as the workflow's `clone` says (1, none).
 */
async function readGitCheckout(
  raw: RawRunOptions,
  source: StepsSource,
  env: NodeJS.ProcessEnv,
): Promise<RunSettings["gitCheckout"]> {
  if (raw.checkoutGit === undefined && raw.checkoutSha === undefined) return undefined;
  if (raw.checkoutGit === undefined || raw.checkoutSha === undefined)
    throw new InputError("--checkout-git and --checkout-sha go together");
  if (raw.checkout !== undefined)
    throw new InputError("--checkout and --checkout-git are two ways to give the checkout: give one");
  try {
    checkGitSource(raw.checkoutGit, raw.checkoutSha);
  } catch (error) {
    throw error instanceof InputError
      ? new InputError(
          error.message.replace("checkout.git.url", "--checkout-git").replace("checkout.git.sha", "--checkout-sha"),
        )
      : error;
  }
  const clone = source.kind === "workflow" ? source.loaded.resolved.clone : undefined;
  return {
    url: raw.checkoutGit,
    sha: raw.checkoutSha,
    depth: clone?.depth ?? 1,
    submodules: clone?.submodules ?? false,
    host: { binary: "git", env },
  };
}

/**
 * `run --resume DIR`: the configuration to continue the run a killed `run` left in DIR (its plan.json and
 * checkpoint.json, src/run/resume-files.ts), with this invocation's cluster flags, host tar and git. InputError
 * (exit 2) for a directory without them, a finished run, or flags that would change the run.
 */
export async function resolveResumeCommand(
  raw: RawRunOptions,
  env: NodeJS.ProcessEnv,
): Promise<{ config: RunCommand; resume: { plan: RunPlan; checkpoint: RunCheckpoint } }> {
  const dir = resolve(requireOption(raw.resume, "--resume"));
  const changing = (["workflow", "steps", "checkout", "out", "image", "timeout", "dryRun"] as const).filter(
    (name) => raw[name] !== undefined,
  );
  if (changing.length > 0)
    throw new InputError(
      `--resume continues the run as it was planned: drop ${changing.map((name) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(", ")}`,
    );
  const resume = readResumeFiles(dir);
  const cluster = resolveClusterOptions(raw, env);
  const { hostTar } = resolveHostTar(env);
  const settings = settingsFromPlan(resume.plan, [], { ...(hostTar ? { hostTar } : {}), git: { binary: "git", env } });
  return {
    config: {
      settings: { ...settings, maxLogBytes: settings.maxLogBytes ?? readSize("64Mi", "--max-log-bytes") },
      kubectlPath: cluster.kubectlPath,
      transport: cluster.transport,
      dryRun: false,
      verbose: raw.verbose ?? false,
      warnings: [],
      clamped: [],
      timings: readExecutorTimings(env),
    },
    resume,
  };
}

/** Validates everything; throws InputError with the file, line and what was expected. Touches no cluster. */
export async function resolveRunCommand(raw: RawRunOptions, env: NodeJS.ProcessEnv): Promise<RunCommand> {
  const outDir = checkOutDir(requireOption(raw.out, "--out"));
  const runId = raw.runId ?? generateRunId();
  if (!isAcceptableRunId(runId))
    throw new InputError(`--run-id expects 1 to 128 printable characters without spaces, got ${JSON.stringify(runId)}`);
  const source = await readStepsSource(raw);
  // The flags that set what a limit governs are held to it like the workflow's values (a steps file has no --config).
  const held: HeldOverrides =
    source.kind === "workflow"
      ? holdOverrides(readOverrides(raw, FLAG_NAMES), source.runner, FLAG_NAMES)
      : { overrides: readOverrides(raw, FLAG_NAMES), clamps: [], warnings: [] };
  const overrides = held.overrides;
  const skipsCheckout = source.kind === "workflow" && source.loaded.resolved.clone.skip;
  const gitCheckout = skipsCheckout ? undefined : await readGitCheckout(raw, source, env);
  if (!skipsCheckout && !gitCheckout) requireOption(raw.checkout, "--checkout");
  const checkoutDir = skipsCheckout || gitCheckout ? undefined : requireDirectory(raw.checkout!, "--checkout");
  const cacheFlags = readCacheFlags(raw, env);
  const sharedStepsDir = raw.sharedSteps ? requireDirectory(raw.sharedSteps, "--shared-steps") : undefined;
  const { secrets, warnings: secretWarnings } = await readRunSecrets(raw, env);
  // Without --namespace the Job goes to the kubeconfig context's namespace. A run leaves that to kubectl (create
  // reports it, later calls pin it; kubectl refuses a malformed kubeconfig or unknown context, an InputError too), so
  // it never loads a YAML parser; a dry run, which spawns nothing, reads the kubeconfig itself to print the calls.
  resolveTransport(raw.transport); // before the dry run reads the kubeconfig
  checkKubeconfigReadable(raw);
  const cluster = resolveClusterOptions(
    raw,
    env,
    raw.namespace ?? (raw.dryRun ? await readNamespaceForDryRun(raw, env) : undefined),
  );
  const podTimeoutMs = readDuration(raw.podTimeout ?? "15m", "--pod-timeout");
  const timings = readExecutorTimings(env);
  const podIdleTimeoutMs = readPodIdleTimeout(raw.podIdleTimeout, timings.beatSeconds);
  const maxOutputBytes = readSize(raw.maxOutputBytes ?? "512Mi", "--max-output-bytes");
  const maxLogBytes = readSize(raw.maxLogBytes ?? "64Mi", "--max-log-bytes");
  // Last of the checks, since hashing the checkout's files for the cache keys can take a while.
  const workflowPlan =
    source.kind === "workflow" ? await planRun(source, runId, held, checkoutDir, cacheFlags) : undefined;
  const plan = workflowPlan?.plan;
  const warnings = [
    ...(source.kind === "workflow" ? source.warnings : []),
    ...(workflowPlan?.warnings ?? []),
    ...secretWarnings,
    ...(skipsCheckout && raw.checkout !== undefined
      ? [`${raw.workflow}: clone.skip is true, so --checkout ${raw.checkout} is not uploaded (/work starts empty)`]
      : []),
  ];
  const declaredCaches = source.kind === "workflow" ? (source.loaded.resolved.caches ?? []).length : 0;
  const cacheRepo = declaredCaches > 0 ? resolveCacheRepo(raw.repo, checkoutDir, raw.workflow!) : undefined;
  const emptyCheckout =
    checkoutDir === undefined && !(plan && !plan.matched) && !raw.dryRun ? makeEmptyCheckout() : undefined;
  return {
    settings: {
      ...buildRunSettings({
        runId,
        target: cluster.target,
        ...(plan ? { plan } : { steps: source.kind === "steps" ? source.steps : [] }),
        overrides,
        checkoutDir: checkoutDir ?? emptyCheckout ?? NO_CHECKOUT,
        ...(sharedStepsDir ? { sharedStepsDir } : {}),
        outDir,
        podTimeoutMs,
        podIdleTimeoutMs,
        maxOutputBytes,
        maxLogBytes,
        keep: raw.keep ?? false,
        secrets,
        ...readKeepWarm(raw.keepWarm, raw.maxWarm),
        ...(raw.skipWarm ? { claimWarm: false } : {}),
        ...resolveHostTar(env),
        ...(source.kind === "workflow" ? { pod: source.runner.config.pod } : {}),
        owner: resolveProcessIdentity(),
        ...(cacheRepo ? { cacheBackend: buildCacheBackend(cacheFlags, cacheRepo.repo) } : {}),
      }),
      ...(gitCheckout ? { gitCheckout } : {}),
    },
    ...(plan && !plan.matched ? { notMatched: { reason: plan.reason } } : {}),
    ...(emptyCheckout ? { emptyCheckout } : {}),
    ...(checkoutDir === undefined ? { skipsCheckout: true } : {}),
    warnings,
    clamped: [...(source.kind === "workflow" ? source.clamped : []), ...held.warnings],
    kubectlPath: cluster.kubectlPath,
    transport: cluster.transport,
    dryRun: raw.dryRun ?? false,
    verbose: raw.verbose ?? false,
    timings,
    ...(cacheRepo ? { caches: { declared: declaredCaches, off: cacheFlags.off, repoFrom: cacheRepo.from } } : {}),
  };
}

/** What a dry run of a workflow without a checkout scans in its place: nothing (it is described, not read). */
export const NO_CHECKOUT = "";
