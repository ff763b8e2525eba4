// The Kubernetes executor: one run as one Job, each lifecycle call delegated to a small module.
import { buildDockerDaemonContainer } from "../../pod/docker-daemon.js";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { CancelledError, describeError, type InfraError } from "../../core/errors.js";
import type { CancelRequest } from "../../manifests/job-annotations.js";
import { CREATE_TOKEN_ANNOTATION, KEPT_ANNOTATION } from "../../manifests/labels.js";
import { formatProcessIdentity } from "../../manifests/owner.js";
import { buildJobManifest } from "../../manifests/manifest.js";
import { buildServiceContainer, chooseServiceMode, type ServiceMode } from "../../manifests/service-containers.js";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { ExtractReport } from "../../transfer/extract-outputs.js";
import type { HostTar } from "../../transfer/host-tar.js";
import type { UploadTrees } from "../../transfer/scan-tree.js";
import type { ExecutorContext } from "./context.js";
import { createJob, readOurJob, type JobOwnership } from "./create-job.js";
import type {
  AttachedPod,
  CrashTeardown,
  Executor,
  ExecutorCrashPath,
  RunPod,
  StepOutcome,
  TeardownReport,
  UploadSummary,
} from "../executor.js";

export type { CrashTeardown } from "../executor.js";
import { deleteJob, type DeleteOutcome } from "./teardown.js";
import { createRunBudget, deleteRunBudget } from "./disruption-budget.js";
import { runTimedPhase } from "../../events/timed-phase.js";
import { startCancelWatch, type CancelWatch } from "./cancel-watch.js";
import { yieldToCancel } from "./yield-to-cancel.js";
import { describeStep } from "../../workflow/step-label.js";
import { startHeartbeat, type Heartbeat } from "./heartbeat.js";
import { formatDuration } from "../../core/duration.js";
import { claimPlaceholder, type Capacity, type ClaimOutcome } from "../../warm/claim-placeholder.js";
import { leaveWarmPlaceholder } from "../../warm/keep-warm.js";
import { checkStepEnvironment, findSecretShadowing } from "../../workflow/step-environment.js";
import type { PodCloneSpec } from "../../pod/git-clone-script.js";
import { POD_SECRETS_DIR } from "../../workflow/pod-paths.js";
import { deliverSecrets, forgetSecrets, type SecretsSummary } from "./deliver-secrets.js";
import type { ArtifactReport, ArtifactSpec } from "../../workflow/artifact-types.js";
import type { CacheSpec, CacheWriter } from "../../workflow/cache-types.js";
import type { CacheArchive, CacheArchiveGate, CacheSaveOutcome } from "../cache-archive.js";
import { chooseHostTar, stageRunnerFiles, uploadFiles } from "./upload.js";
import { downloadOutputs } from "./download.js";
import { waitForPod } from "./wait-for-pod.js";
import { runStep } from "./run-step.js";
import { END_LOG_BOUNDS, readServiceLog, waitForServices } from "./wait-for-services.js";
import { findRunJob, findRunningPod, readPodRunState, readPodSecrets } from "./attach-run.js";
import { cloneInPod, probeGit } from "./clone-in-pod.js";
import { restoreCacheArchive, saveCacheArchive } from "./cache-transfer.js";
import { collectArtifact } from "./collect-artifact.js";

/** Builds the manifest the executor will create; exported so dry runs print exactly the same one. */
export function buildRunManifest(
  ctx: Pick<ExecutorContext, "settings">,
  createToken: string,
  serviceMode: ServiceMode = "sidecar",
): IJob {
  const s = ctx.settings;
  const services = (s.services ?? []).map((service) => buildServiceContainer(service, serviceMode, s.pod?.security));
  const beside = [
    ...(s.dockerDaemon ? [buildDockerDaemonContainer(s.dockerDaemon.image)] : []),
    ...(serviceMode === "container" ? services : []),
  ];
  return buildJobManifest({
    jobName: s.jobName,
    ...(s.target.namespaceFromContext ? {} : { namespace: s.target.namespace }),
    runId: s.runId,
    runIdLabel: s.runIdLabel,
    image: s.image,
    cpu: s.cpu,
    memory: s.memory,
    budgetSeconds: Math.ceil(s.timeoutMs / 1000),
    createToken,
    ...(s.owner ? { owner: s.owner } : {}),
    ...(s.jobAnnotations ? { jobAnnotations: s.jobAnnotations } : {}),
    ...(s.cacheBackend?.kind === "pvc" && (s.caches?.length ?? 0) > 0
      ? { cacheClaim: { claim: s.cacheBackend.claim, repo: s.cacheBackend.repo } }
      : {}),
    ...(s.podIdleTimeoutMs === undefined ? {} : { podIdleSeconds: Math.ceil(s.podIdleTimeoutMs / 1000) }),
    ...(s.placement ? { placement: s.placement } : {}),
    ...(s.ephemeralStorage ? { ephemeralStorage: s.ephemeralStorage } : {}),
    ...(beside.length > 0 ? { extraContainers: beside } : {}),
    ...(serviceMode === "sidecar" && services.length > 0 ? { initContainers: services } : {}),
    ...(s.pod ? { pod: s.pod } : {}),
  });
}

/** The upload phase's closing line: what went in, how it was packed, what the pod confirmed. */
function describeUpload(summary: UploadSummary, hostTar: HostTar | undefined): string {
  const content = summary.bytes === undefined ? "" : `, ${summary.bytes} bytes`;
  const packer = hostTar ? `GNU tar ${hostTar.version}` : "the runner's packer";
  return `uploaded ${summary.files} files${content} (archive ${summary.archiveBytes} bytes, ${summary.entries} entries, packed by ${packer}; receipt and count verified in the pod)`;
}

/** The secrets phase's closing line: names and bytes, never a value. */
function describeSecrets(summary: SecretsSummary): string {
  const count = `${summary.names.length} ${summary.names.length === 1 ? "secret" : "secrets"}`;
  return `delivered ${count} (${summary.names.join(", ")}) to the pod's memory-backed volume over stdin, ${summary.bytes} bytes; receipt and byte count verified in the pod`;
}

/** How long teardown waits for a kept pod to confirm its secrets file is gone. */
const FORGET_SECRETS_TIMEOUT_MS = 15_000;

/** The context with the namespace the Job was created in pinned for every later call. */
function pinNamespace(ctx: ExecutorContext, namespace: string): ExecutorContext {
  if (ctx.settings.target.namespace === namespace) return ctx;
  return { ...ctx, settings: { ...ctx.settings, target: { ...ctx.settings.target, namespace } } };
}

export class KubernetesExecutor implements Executor, ExecutorCrashPath {
  #ctx: ExecutorContext;
  readonly #startedAt = Date.now();
  readonly #createToken = randomBytes(12).toString("hex");
  #ownership: JobOwnership = "none";
  #pod: RunPod | undefined;
  #tornDown: Promise<TeardownReport> | undefined;
  /** Set once a delete of the Job succeeded (teardown or teardownNowSync). */
  #deleted = false;
  /** The host directory of the runner's own files (helper, step scripts), staged while the Job is created. */
  #staging: Promise<string> | undefined;
  /** The same directory once staged, for teardownNowSync. */
  #stagedDir: string | undefined;
  /** The host GNU tar that packs the upload, probed while the Job is created; undefined: the runner's own packer. */
  #hostTar: Promise<HostTar | undefined> | undefined;
  /** The run's presence in the cluster once its Job exists, until teardown: heartbeat and cancel watch. */
  #presence:
    { readonly heartbeat: Heartbeat; readonly cancelWatch: CancelWatch; readonly startWatch: () => void } | undefined;
  /** What the look for a warm placeholder found, once setup looked. */
  #claim: ClaimOutcome | undefined;
  #podWaitMs: number | undefined;
  /** Set once the secrets exec began: from then on the pod may hold them, and a kept Job has them removed. */
  #secretsSent = false;
  /** Set once the budget's create began (settings.disruptionBudget): from then on teardown deletes it. */
  #budgetSent = false;
  /** The services whose log tail is in the run's log already (the one that failed to become ready). */
  readonly #servicesLogged = new Set<string>();

  constructor(ctx: ExecutorContext) {
    this.#ctx = ctx;
  }

  get pod(): RunPod | undefined {
    return this.#pod;
  }

  /** "warm" when setup claimed a placeholder before creating the Job, "cold" when it did not; undefined before it looked. */
  get capacity(): Capacity | undefined {
    return this.#claim?.capacity;
  }

  /** From the Job's creation to its pod running, once it runs. */
  get podWaitMs(): number | undefined {
    return this.#podWaitMs;
  }

  /** The Job's namespace: the pinned one, else the context's once create has reported it. */
  get namespace(): string | undefined {
    return this.#ctx.settings.target.namespace;
  }

  /**
   * Also refuses, as InputError and before any kubectl call, an environment the steps cannot get byte for byte
   * (src/workflow/step-environment.ts), and warns of variables a secret of the same name overrides.
   */
  async setup(): Promise<RunPod> {
    const ctx = this.#ctx;
    checkStepEnvironment(ctx.settings);
    for (const { name, where } of findSecretShadowing(ctx.settings)) {
      ctx.emit({
        kind: "notice",
        level: "warning",
        message: `${where} sets ${name}, which is also a secret: every step sees the secret's value`,
      });
    }
    const manifest = buildRunManifest(ctx, this.#createToken, await this.#chooseServiceMode());
    this.#staging ??= stageRunnerFiles(ctx.settings, ctx.timings.beatSeconds);
    this.#staging.then((dir) => (this.#stagedDir = dir)).catch(() => {}); // a failure surfaces in copyIn
    this.#hostTar ??= chooseHostTar(ctx.settings.hostTar);
    this.#hostTar.catch(() => {}); // likewise
    const create = async (): Promise<{ namespace: string; budget: string }> => {
      // The claim comes first: the placeholder's pod makes room on its node, which the tenant keeps for the run's.
      this.#claim =
        ctx.settings.claimWarm === false
          ? { capacity: "cold", detail: "not looking for warm placeholders" }
          : await claimPlaceholder(
              { cluster: ctx.cluster, target: ctx.settings.target, signal: ctx.signal },
              ctx.settings,
            );
      let jobUid: string | undefined;
      const namespace = await createJob(
        ctx,
        manifest,
        (ownership) => (this.#ownership = ownership),
        (job) => (jobUid = job.metadata?.uid),
      );
      this.#ctx = pinNamespace(ctx, namespace);
      if (!ctx.settings.disruptionBudget) return { namespace, budget: "" };
      // Right after the Job, before its pod can run: a drain from then on waits for the run.
      this.#budgetSent = true;
      return { namespace, budget: `; ${await createRunBudget(this.#ctx, jobUid)}` };
    };
    const { namespace } = await this.#phase(
      "create",
      create,
      ({ namespace: ns, budget }) =>
        `created Job ${ns}/${ctx.settings.jobName} on ${this.#claim?.capacity} capacity: ${this.#claim?.detail}${budget}`,
    );
    this.#ctx = pinNamespace(ctx, namespace);
    this.#startPresence();
    const podDeadline = Math.min(Date.now() + ctx.settings.podTimeoutMs, this.#startedAt + ctx.settings.timeoutMs);
    const wait = async (): Promise<RunPod> => {
      const started = Date.now();
      const pod = await this.#unlessHeartbeatRefused((waitCtx) => waitForPod(waitCtx, podDeadline));
      this.#podWaitMs = Date.now() - started;
      return pod;
    };
    const describePod = (pod: RunPod): string =>
      `pod ${pod.name} running on ${pod.node || "its node"}, ${this.#claim?.capacity}: the pod waited ${formatDuration(this.#podWaitMs ?? 0)}`;
    this.#pod = await this.#phase("pod", wait, describePod);
    this.#presence?.startWatch();
    if ((ctx.settings.services?.length ?? 0) > 0) {
      const pod = this.#pod;
      await this.#phase(
        "services",
        () => this.#unlessHeartbeatRefused((waitCtx) => waitForServices(waitCtx, pod, this.#servicesLogged)),
        (detail) => detail,
      );
    }
    return this.#pod;
  }

  /**
   * `pod`, when given, is the pod the run had (its checkpoint's): another pod of the Job is not the run's. The Job
   * becomes this run's (teardown deletes it, and its disruption budget when the settings have one).
   */
  async attach(pod?: string): Promise<AttachedPod> {
    await findRunJob(this.#ctx);
    this.#ownership = "ours";
    this.#budgetSent = this.#ctx.settings.disruptionBudget === true;
    this.#startPresence();
    const found = await this.#unlessHeartbeatRefused((ctx) => findRunningPod(ctx, pod));
    if (found === "waiting") {
      // Stopped during the pod's wait: the wait goes on, bounded by --pod-timeout from now.
      const deadline = Date.now() + this.#ctx.settings.podTimeoutMs;
      this.#pod = await this.#unlessHeartbeatRefused((ctx) => waitForPod(ctx, deadline));
    } else this.#pod = found;
    this.#presence?.startWatch();
    const state = await readPodRunState(this.#ctx, this.#pod);
    this.#secretsSent = state.secrets;
    const secrets = state.secrets ? await readPodSecrets(this.#ctx, this.#pod) : [];
    // Pinned like the namespace: an upload made again delivers them again.
    if (secrets.length > 0) this.#ctx = { ...this.#ctx, settings: { ...this.#ctx.settings, secrets } };
    return { pod: this.#pod, state, secrets };
  }

  async hasGit(): Promise<boolean> {
    return probeGit(this.#ctx, this.#requirePod());
  }

  async cloneCheckout(spec: PodCloneSpec): Promise<void> {
    const pod = this.#requirePod();
    const depth = `depth ${spec.depth}${spec.submodules ? ", with submodules" : ""}${spec.tags ? ", with tags" : ""}`;
    await this.#phase(
      "clone",
      () => cloneInPod(this.#ctx, pod, spec),
      (head) => `cloned ${spec.url} at ${head} in the pod (${depth})`,
    );
  }

  async copyIn(trees: UploadTrees): Promise<UploadSummary> {
    const pod = this.#requirePod();
    const staging = await (this.#staging ??= stageRunnerFiles(this.#ctx.settings, this.#ctx.timings.beatSeconds));
    this.#stagedDir = staging;
    const hostTar = await (this.#hostTar ??= chooseHostTar(this.#ctx.settings.hostTar));
    const summary = await this.#phase(
      "upload",
      () => uploadFiles(this.#ctx, pod, staging, trees, hostTar),
      (s) => describeUpload(s, hostTar),
      (s) => s.archiveBytes,
    );
    if ((this.#ctx.settings.secrets?.length ?? 0) > 0) {
      this.#secretsSent = true;
      await this.#phase("secrets", () => deliverSecrets(this.#ctx, pod), describeSecrets);
    }
    return summary;
  }

  async runStep(
    index: number,
    deadlineAt: number,
    from?: { readonly stdout: number; readonly stderr: number },
  ): Promise<StepOutcome> {
    const pod = this.#requirePod();
    return yieldToCancel(
      this.#ctx,
      describeStep(index, this.#ctx.settings.steps[index]?.name),
      runStep(this.#ctx, pod, index, deadlineAt, from),
    );
  }

  async restoreCache(
    spec: CacheSpec,
    archive: CacheArchive,
    gate?: CacheArchiveGate,
  ): Promise<{ readonly bytes: number }> {
    const pod = this.#requirePod();
    return yieldToCancel(
      this.#ctx,
      `the restore of cache ${spec.key}`,
      restoreCacheArchive(this.#ctx, pod, spec, archive, gate),
    );
  }

  async saveCache(spec: CacheSpec, writer: CacheWriter): Promise<CacheSaveOutcome> {
    const pod = this.#requirePod();
    return yieldToCancel(this.#ctx, `the save of cache ${spec.key}`, saveCacheArchive(this.#ctx, pod, spec, writer));
  }

  async collectArtifact(spec: ArtifactSpec, maxBytes: number): Promise<ArtifactReport> {
    const pod = this.#requirePod();
    return yieldToCancel(
      this.#ctx,
      `the collection of artifact ${spec.name}`,
      collectArtifact(this.#ctx, pod, spec, maxBytes),
    );
  }

  async copyOut(): Promise<ExtractReport> {
    const pod = this.#requirePod();
    // After a cancel the run's signal is aborted: what the steps wrote is collected within the clean-up's bound.
    const ctx = this.#ctx.signal.aborted ? { ...this.#ctx, signal: this.#ctx.cleanupSignal() } : this.#ctx;
    return this.#phase(
      "download",
      () => downloadOutputs(ctx, pod),
      (r) =>
        `downloaded ${r.files.length} files, ${r.bytes} bytes${r.refused.length ? `, refused ${r.refused.length}` : ""}`,
    );
  }

  async leave(): Promise<void> {
    await this.#stopPresence().catch(() => undefined);
    await this.#removeStaging();
  }

  teardown(): Promise<TeardownReport> {
    this.#tornDown ??= this.#teardownOnce();
    return this.#tornDown;
  }

  async #teardownOnce(): Promise<TeardownReport> {
    const { settings, timings, cluster, emit } = this.#ctx;
    const started = Date.now();
    emit({ kind: "phase-start", phase: "teardown" });
    await this.#stopPresence();
    await this.#logServices();
    const unstaged = this.#removeStaging();
    let result: DeleteOutcome;
    /** Whether a Job of this run may be there for all the runner knows, and so must be named with its delete command. */
    let mayBeOurs = this.#ownership === "ours";
    if (this.#ownership === "none") result = { deleted: false, detail: "no Job of this run was created" };
    else if (settings.keep) {
      await this.#markKept();
      const command = this.#deleteCommand();
      const secrets = await this.#forgetSecretsOfKeptPod();
      result = {
        deleted: false,
        detail: `kept Job ${settings.jobName} (--keep)${secrets}; delete it with: ${command}`,
      };
    } else if (this.#ownership === "unknown") {
      const found = await readOurJob({ ...this.#ctx, signal: new AbortController().signal }, this.#createToken);
      if (found.kind === "ours") {
        mayBeOurs = true;
        result = await deleteJob(cluster, settings.target.namespace, settings.jobName, timings.deleteRetry);
      } else if (found.kind === "theirs")
        result = { deleted: false, detail: `no Job of this run was found (create did not complete)` };
      else {
        // The create may have made it: a Job that cannot be read is named, never passed over in silence.
        mayBeOurs = true;
        result = {
          deleted: false,
          detail: `could not tell whether the unfinished create made Job ${settings.jobName}: ${found.reason}`,
          ...(found.refused ? { reason: found.refused } : {}),
        };
      }
    } else result = await deleteJob(cluster, settings.target.namespace, settings.jobName, timings.deleteRetry);
    if (result.deleted) this.#deleted = true;
    const budget = this.#budgetSent
      ? await deleteRunBudget(cluster, settings.target.namespace, settings.jobName, timings.deleteRetry)
      : undefined;
    if (budget && !budget.ok) emit({ kind: "notice", level: "warning", message: budget.detail });
    const warm = result.deleted && this.#pod && settings.keepWarm ? await this.#keepWarm(settings.keepWarm) : undefined;
    await unstaged;
    const leftBehind = mayBeOurs && !settings.keep && !result.deleted;
    const deleted = budget ? `${result.detail}; ${budget.detail}` : result.detail;
    const detail = leftBehind
      ? `${deleted}; delete it with: ${this.#deleteCommand()}`
      : warm
        ? `${deleted}; ${warm}`
        : deleted;
    emit({ kind: "phase-end", phase: "teardown", ok: !leftBehind, durationMs: Date.now() - started, detail });
    return {
      deleted: result.deleted,
      leftBehind,
      detail,
      ...(leftBehind && result.reason ? { reason: result.reason } : {}),
    };
  }

  /**
   * The last resort of a runner that is crashing (an uncaught exception), when teardown cannot be awaited:
   * deletes the Job synchronously, blocking the process for up to `timeoutMs`, if this run created it, does not
   * keep it and teardown has not deleted it yet. When the create was not confirmed, the Job is read back first
   * and deleted only if it carries this run's create token. Also removes the runner files staged on the host.
   * Never throws.
   */
  teardownNowSync(timeoutMs: number): CrashTeardown {
    const { settings, cluster } = this.#ctx;
    this.removeStagedFilesSync();
    this.stopPresenceSync();
    const command = this.#deleteCommand();
    if (this.#deleted) return { detail: `Job ${settings.jobName} was already deleted`, mayBeLeft: false };
    if (this.#ownership === "none") return { detail: "no Job of this run was created", mayBeLeft: false };
    if (settings.keep)
      return { detail: `kept Job ${settings.jobName} (--keep); delete it with: ${command}`, mayBeLeft: false };
    if (this.#ownership === "unknown" && !this.#isOurJobSync(timeoutMs)) {
      return {
        detail: `the Job's create was not confirmed and no Job of this run was found; if Job ${settings.jobName} exists, delete it with: ${command}`,
        mayBeLeft: true,
      };
    }
    const deleted = cluster.deleteJobNowSync(settings.target.namespace, settings.jobName, timeoutMs);
    if (deleted.ok) {
      this.#deleted = true;
      return { detail: `deleted Job ${settings.jobName}`, mayBeLeft: false };
    }
    return {
      detail: `could not delete Job ${settings.jobName}: ${deleted.why}; delete it with: ${command}`,
      mayBeLeft: true,
    };
  }

  /**
   * Native sidecars where the server has them (Kubernetes >= 1.29), else plain containers; asked only when the run
   * has services. A version that cannot be read means plain containers, which every server runs, with a warning.
   */
  async #chooseServiceMode(): Promise<ServiceMode> {
    const ctx = this.#ctx;
    if ((ctx.settings.services?.length ?? 0) === 0) return "sidecar";
    try {
      return chooseServiceMode(await ctx.cluster.getServerVersion({ signal: ctx.signal }));
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      ctx.emit({
        kind: "notice",
        level: "warning",
        message: `could not read the server's version (${describeError(error)}): the services run as plain containers, not native sidecars`,
      });
      return "container";
    }
  }

  /** The end of each service's log into the run's log, before the Job goes; never fails the teardown. */
  async #logServices(): Promise<void> {
    const pod = this.#pod;
    const services = (this.#ctx.settings.services ?? []).filter((service) => !this.#servicesLogged.has(service.name));
    if (pod === undefined || services.length === 0) return;
    for (const service of services) {
      const text = await readServiceLog(this.#ctx, pod, service.name, END_LOG_BOUNDS);
      this.#ctx.emit({ kind: "service-log", service: service.name, when: "end", text });
    }
  }

  /** --keep-warm: a placeholder of the run's size and image keeps the node the run had; a failure is a warning, never the run's. */
  async #keepWarm(keepWarm: { seconds: number; maxWarm: number }): Promise<string> {
    const { settings, cluster, emit } = this.#ctx;
    const left = await leaveWarmPlaceholder(
      { cluster, target: settings.target },
      {
        ...keepWarm,
        cpu: settings.cpu,
        memory: settings.memory,
        image: settings.image,
        ...(settings.pod ? { pod: settings.pod } : {}),
      },
    );
    if (!left.ok) emit({ kind: "notice", level: "warning", message: left.detail });
    return left.detail;
  }

  /** For a kept Job whose pod got the secrets: removes them from it, and says how that went (" ..." or ""). */
  async #forgetSecretsOfKeptPod(): Promise<string> {
    if (!this.#secretsSent || !this.#pod) return "";
    const failed = await forgetSecrets(this.#ctx, this.#pod, FORGET_SECRETS_TIMEOUT_MS).catch((error: unknown) =>
      String(error),
    );
    return failed === undefined
      ? ", its secrets removed from the pod"
      : `; its pod may still hold the run's secrets in ${POD_SECRETS_DIR} (${failed})`;
  }

  #deleteCommand(): string {
    const { settings, cluster } = this.#ctx;
    return cluster.formatDeleteJobCommand(settings.target.namespace, settings.jobName);
  }

  /**
   * Starts the heartbeat once the Job exists, and the cancel watch once the pod runs or `cancelWatchAfterMs` into the
   * pod wait (`startWatch` starts it early, once): the cluster then sees the run alive, and a cancel asked for from
   * another process (the Job's cancel-requested annotation) cancels it like the caller's signal.
   */
  #startPresence(): void {
    const ctx = this.#ctx;
    const onCancel = (request: CancelRequest): void => {
      const by = request.by ? ` by ${formatProcessIdentity(request.by)}` : "";
      const message = `cancel requested through the cluster${by} at ${request.at}`;
      ctx.emit({ kind: "notice", level: "info", message: `${message}: stopping the step and collecting the outputs` });
      ctx.requestCancel(new CancelledError(message));
    };
    let watch: CancelWatch | undefined;
    const startWatch = (): void => {
      clearTimeout(early);
      watch ??= startCancelWatch(ctx, onCancel);
    };
    const early = setTimeout(startWatch, ctx.timings.cancelWatchAfterMs);
    early.unref();
    const cancelWatch: CancelWatch = {
      stop: async () => {
        clearTimeout(early);
        await watch?.stop();
      },
      stopNow: () => {
        clearTimeout(early);
        watch?.stopNow();
      },
    };
    this.#presence = { heartbeat: startHeartbeat(ctx), cancelWatch, startWatch };
  }

  /**
   * Runs `work` (the pod wait) beside the heartbeat's first refresh and fails with that refresh's permission error
   * when the API server refused it (403, 401), stopping `work` through its context's signal: a run whose heartbeat
   * cannot be refreshed looks abandoned to gc once `--stale-after` has passed, and gc would delete it mid-step. The
   * refresh is one patch with kubectl's request timeout, so waiting for it when `work` is done first is bounded.
   */
  async #unlessHeartbeatRefused<T>(work: (ctx: ExecutorContext) => Promise<T>): Promise<T> {
    const first = this.#presence?.heartbeat.first ?? Promise.resolve(undefined);
    const refusal = new AbortController();
    let refused: InfraError | undefined;
    void first.then((error) => {
      refused = error;
      if (error) refusal.abort(error);
    });
    let value: T;
    try {
      value = await work({ ...this.#ctx, signal: AbortSignal.any([this.#ctx.signal, refusal.signal]) });
    } catch (error) {
      throw refused ?? error;
    }
    const error = await first;
    if (error) throw error;
    return value;
  }

  /** Ends the heartbeat and the cancel watch (teardown: before the delete, so neither touches a Job being deleted). */
  async #stopPresence(): Promise<void> {
    const presence = this.#presence;
    if (!presence) return;
    await Promise.all([presence.heartbeat.stop(), presence.cancelWatch.stop()]);
  }

  /** Ends the heartbeat and the cancel watch at once, for a runner about to exit; never throws. */
  stopPresenceSync(): void {
    this.#presence?.heartbeat.stopNow();
    this.#presence?.cancelWatch.stopNow();
  }

  /** Marks a Job kept on purpose (--keep), so that gc spares it while it lasts (its pod stops itself when idle). */
  async #markKept(): Promise<void> {
    const { settings, cluster, emit } = this.#ctx;
    try {
      await cluster.patchJobAnnotations(settings.target.namespace, settings.jobName, {
        [KEPT_ANNOTATION]: new Date().toISOString(),
      });
    } catch (error) {
      emit({
        kind: "notice",
        level: "warning",
        message: `could not mark Job ${settings.jobName} as kept (${describeError(error)}): gc may remove it once its heartbeat is stale`,
      });
    }
  }

  /** Removes the runner files staged on the host for the upload, at once, for a runner about to exit; never throws. */
  removeStagedFilesSync(): void {
    try {
      if (this.#stagedDir !== undefined) rmSync(this.#stagedDir, { recursive: true, force: true });
    } catch {
      // Best effort: the Job matters more than a temp dir.
    }
  }

  /** Reads the Job back synchronously and compares its create token with ours (like readOurJob, for the crash path). */
  #isOurJobSync(timeoutMs: number): boolean {
    const { settings, cluster } = this.#ctx;
    const read = cluster.getJobNowSync(settings.target.namespace, settings.jobName, timeoutMs);
    return read.ok && read.value.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] === this.#createToken;
  }

  /** Removes the staged runner files, if any were staged; never fails the teardown. */
  async #removeStaging(): Promise<void> {
    const staging = await this.#staging?.catch(() => undefined);
    if (staging !== undefined) await rm(staging, { recursive: true, force: true }).catch(() => undefined);
  }

  #requirePod(): RunPod {
    if (!this.#pod) throw new Error("executor: setup has not succeeded");
    return this.#pod;
  }

  #phase<T>(
    phase: "create" | "pod" | "services" | "upload" | "clone" | "secrets" | "download",
    work: () => Promise<T>,
    describe: (value: T) => string,
    countBytes?: (value: T) => number,
  ): Promise<T> {
    // Not the create: a create abandoned in flight could land after teardown looked for the Job.
    const bounded = phase === "create" ? work : () => yieldToCancel(this.#ctx, `the ${phase} phase`, work());
    return runTimedPhase(this.#ctx.emit, phase, bounded, describe, countBytes);
  }
}
