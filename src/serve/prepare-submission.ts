// Turns a submitRun input into a planned run (or a skipped one) before anything is queued: the workflow validated, the checkout checked, the settings built.
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { DEFAULT_RUNNER_CONFIG } from "../config/runner-config.js";
import { holdOverrides, SUBMISSION_NAMES } from "../settings/hold-overrides.js";
import { InputError } from "../core/errors.js";
import type { CacheBackend } from "../executor/kubernetes/context.js";
import { buildRunSettings } from "../settings/build-run-settings.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { buildNotMatchedResult, buildSkippedStep, type RunResult } from "../run/run-result.js";
import { SECRET_NAME_PATTERN } from "../secrets/secret.js";
import { readOverrides } from "../settings/read-overrides.js";
import { readTrigger } from "../settings/read-trigger.js";
import { loadWorkflowText } from "../settings/load-workflow.js";
import { prepareWorkflowRun } from "../settings/prepare-workflow-run.js";
import { formatWarning } from "../workflow/workflow-errors.js";
import { checkGitSource, type GitCheckoutSpec } from "../transfer/git-checkout.js";
import { checkServedGitUrl, resolveDirInsideRoot } from "./host-inputs.js";
import { XrpcError } from "./http-errors.js";
import type { RunDefaults } from "../run/run-defaults.js";
export type { RunDefaults } from "../run/run-defaults.js";

/** The submitRun input as its lexicon (lexicons/dev/knotless/runner/submitRun.json) shapes it. */
export interface SubmitRunInput {
  readonly workflow: { readonly name: string; readonly text: string };
  readonly checkout?: {
    readonly dir?: string;
    readonly git?: {
      readonly url: string;
      readonly sha: string;
      readonly depth?: number;
      readonly submodules?: boolean;
    };
  };
  readonly sharedSteps?: { readonly dir: string };
  readonly trigger?: { readonly event: string; readonly ref?: string; readonly sha?: string; readonly repo?: string };
  readonly secrets?: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  readonly runId?: string;
  readonly overrides?: {
    readonly image?: string;
    readonly cpu?: string;
    readonly memory?: string;
    readonly timeout?: string;
    readonly stepTimeout?: string;
  };
}

/** The most a request may carry; past them, 413. */
export interface SubmissionLimits {
  readonly maxWorkflowBytes: number;
  readonly maxSecrets: number;
  readonly maxSecretBytes: number;
}

interface PreparedBase {
  readonly runId: string;
  readonly repo: string | null;
  readonly workflowName: string;
  readonly outDir: string;
  readonly jobName: string;
  /** The request as the database keeps it: the secrets' names only, never their values. */
  readonly storedRequest: string;
  readonly hasSecrets: boolean;
}

export type PreparedSubmission =
  | (PreparedBase & {
      readonly kind: "run";
      readonly settings: RunSettings;
      readonly git?: GitCheckoutSpec;
      /** The workflow's warnings (what `limits` clamped among them), `file:line:column: warning: …`: the run's log starts with them. */
      readonly warnings: readonly string[];
    })
  | (PreparedBase & { readonly kind: "skipped"; readonly reason: string; readonly result: RunResult });

/** Run ids `serve` takes: they name a directory under the state directory, so no '/' and no leading '.'. */
const SERVE_RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The run id of a submission: the given one, checked, or a new sortable one. */
export function readSubmittedRunId(runId: string | undefined, now: Date = new Date()): string {
  if (runId === undefined)
    return `${now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15)}-${randomBytes(4).toString("hex")}`;
  if (!SERVE_RUN_ID.test(runId))
    throw new XrpcError(
      400,
      "InvalidRequest",
      `runId expects 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, got ${JSON.stringify(runId)}`,
    );
  return runId;
}

/** Refuses a request over the limits with 413, naming what is too large. */
export function checkSubmissionSize(input: SubmitRunInput, limits: SubmissionLimits): void {
  const workflowBytes = Buffer.byteLength(input.workflow.text);
  if (workflowBytes > limits.maxWorkflowBytes)
    throw new XrpcError(
      413,
      "PayloadTooLarge",
      `the workflow text is ${workflowBytes} bytes; at most ${limits.maxWorkflowBytes} are taken`,
    );
  const secrets = input.secrets ?? [];
  if (secrets.length > limits.maxSecrets)
    throw new XrpcError(413, "PayloadTooLarge", `${secrets.length} secrets; at most ${limits.maxSecrets} are taken`);
  const secretBytes = secrets.reduce((sum, secret) => sum + Buffer.byteLength(secret.value), 0);
  if (secretBytes > limits.maxSecretBytes)
    throw new XrpcError(
      413,
      "PayloadTooLarge",
      `the secrets' values are ${secretBytes} bytes; at most ${limits.maxSecretBytes} are taken`,
    );
}

/**
 * Validates and plans a submission; throws WorkflowError (400 InvalidWorkflow, file:line:column) for a bad workflow,
 * XrpcError or InputError (400) for anything else wrong. Reads the workflow text and the checkout (hashing the files
 * that cache keys name); calls no cluster.
 */
export async function prepareSubmission(
  input: SubmitRunInput,
  runId: string,
  stateDir: string,
  defaults: RunDefaults,
): Promise<PreparedSubmission> {
  const git = input.checkout?.git;
  if (git !== undefined && input.checkout?.dir !== undefined)
    throw new InputError("checkout takes dir or git, not both");
  if (git !== undefined && defaults.git === undefined)
    throw new XrpcError(501, "NotImplemented", "this service has no git to clone with: give checkout.dir");
  if (git !== undefined) {
    checkServedGitUrl(git.url, defaults.allowHttpGit ?? false);
    checkGitSource(git.url, git.sha);
  }
  const held = holdOverrides(
    readOverrides(input.overrides ?? {}, SUBMISSION_NAMES),
    defaults.runner ?? { config: DEFAULT_RUNNER_CONFIG },
    SUBMISSION_NAMES,
  );
  const overrides = held.overrides;
  const trigger = input.trigger && readTrigger(input.trigger, { of: (key) => `trigger.${key}` });
  const secrets = readSecrets(input.secrets ?? []);
  const loaded = await loadWorkflowText(input.workflow.text, input.workflow.name, {
    ...(defaults.runner ? { runner: defaults.runner } : {}),
    ...(defaults.nixery !== undefined ? { nixeryBase: defaults.nixery } : {}),
  });
  const skipsCheckout = loaded.resolved.clone.skip;
  const checkoutDir =
    input.checkout?.dir !== undefined
      ? resolveDirInsideRoot(input.checkout.dir, "checkout.dir", defaults.checkoutRoot)
      : undefined;
  if (checkoutDir === undefined && git === undefined && !skipsCheckout)
    throw new XrpcError(
      400,
      "InvalidRequest",
      "checkout.dir or checkout.git is required (the workflow does not say clone.skip)",
    );
  const outDir = join(stateDir, "runs", runId);
  // A git checkout is cloned when the run starts, into its own directory; its files are not there to hash yet, so a cache key's hashFiles hashes nothing.
  const clone: GitCheckoutSpec | undefined =
    git !== undefined && !skipsCheckout
      ? {
          url: git.url,
          sha: git.sha,
          depth: git.depth ?? loaded.resolved.clone.depth ?? 1,
          submodules: git.submodules ?? loaded.resolved.clone.submodules,
        }
      : undefined;
  const sharedStepsDir = input.sharedSteps
    ? resolveDirInsideRoot(input.sharedSteps.dir, "sharedSteps.dir", defaults.checkoutRoot)
    : undefined;
  const cachesOn = defaults.caches !== undefined && !defaults.caches.off;
  const { plan } = await prepareWorkflowRun(loaded, {
    runId,
    ...(trigger ? { trigger } : {}),
    overrides,
    overrideClamps: held.clamps,
    ...(checkoutDir ? { checkoutDir } : {}),
    cachesOff: !cachesOn,
  });
  // Caches are kept per repository: the trigger's, else one named after where the checkout comes from (as `run` names a local one).
  const cacheRepo =
    trigger?.repo ??
    `local/${createHash("sha256")
      .update(git?.url ?? checkoutDir ?? input.workflow.name)
      .digest("hex")
      .slice(0, 12)}`;
  const store = defaults.caches?.store;
  const cacheBackend: CacheBackend | undefined =
    cachesOn && store
      ? store.kind === "pvc"
        ? { kind: "pvc", repo: cacheRepo, claim: store.claim, maxBytes: defaults.caches!.maxBytes }
        : { kind: "dir", repo: cacheRepo, dir: store.dir, maxBytes: defaults.caches!.maxBytes }
      : undefined;
  const settings = buildRunSettings({
    runId,
    target: defaults.target,
    plan,
    overrides,
    // A workflow that skips the checkout uploads an empty /work: the run's own empty directory, made when it starts.
    checkoutDir: checkoutDir ?? (clone ? join(outDir, "checkout") : join(outDir, "empty-checkout")),
    ...(sharedStepsDir ? { sharedStepsDir } : {}),
    outDir,
    podTimeoutMs: defaults.podTimeoutMs,
    ...(defaults.podIdleTimeoutMs === undefined ? {} : { podIdleTimeoutMs: defaults.podIdleTimeoutMs }),
    maxOutputBytes: defaults.maxOutputBytes,
    maxLogBytes: defaults.maxLogBytes,
    secrets,
    ...(defaults.keepWarm ? { keepWarm: defaults.keepWarm } : {}),
    ...(defaults.claimWarm === false ? { claimWarm: false } : {}),
    ...(defaults.hostTar ? { hostTar: defaults.hostTar } : {}),
    ...(defaults.owner ? { owner: defaults.owner } : {}),
    ...(cacheBackend ? { cacheBackend } : {}),
    ...(defaults.runner ? { pod: defaults.runner.config.pod } : {}),
  });
  const base: PreparedBase = {
    runId,
    repo: trigger?.repo ?? null,
    workflowName: plan.workflow.name,
    outDir,
    jobName: settings.jobName,
    storedRequest: JSON.stringify({
      ...input,
      secrets: (input.secrets ?? []).map((secret) => ({ name: secret.name })),
    }),
    hasSecrets: secrets.length > 0,
  };
  if (plan.matched)
    return {
      ...base,
      kind: "run",
      settings,
      ...(clone ? { git: clone } : {}),
      warnings: [...loaded.warnings.map(formatWarning), ...held.warnings],
    };
  const now = new Date();
  const result = buildNotMatchedResult({
    runId,
    startedAt: now,
    finishedAt: now,
    job: {
      namespace: defaults.target.namespace ?? "",
      name: settings.jobName,
      pod: null,
      node: null,
      image: settings.image,
    },
    steps: settings.steps.map((step) => buildSkippedStep(step.name)),
    logs: { limitBytes: defaults.maxLogBytes, keptBytes: 0, droppedBytes: 0 },
    workflow: plan.workflow,
  });
  return { ...base, kind: "skipped", reason: plan.reason, result };
}

function readSecrets(
  raw: ReadonlyArray<{ readonly name: string; readonly value: string }>,
): Array<{ name: string; value: string }> {
  const seen = new Set<string>();
  for (const { name, value } of raw) {
    if (!SECRET_NAME_PATTERN.test(name))
      throw new InputError(`secrets: ${JSON.stringify(name)}: a secret name must match ${SECRET_NAME_PATTERN.source}`);
    if (seen.has(name)) throw new InputError(`secrets: ${name} is given twice`);
    if (value === "") throw new InputError(`secrets: ${name} is empty: an empty secret would mask everything`);
    seen.add(name);
  }
  return raw.map((secret) => ({ name: secret.name, value: secret.value }));
}
