// The one adapter from the mill's world to the run path: an offer checked as a workflow this runner can run, a commit run as one Job through superviseRun (as `serve` runs it), a run a restart left re-attached to as `serve` re-attaches.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { RunCluster } from "../cluster/cluster.js";
import { CancelledError, describeError } from "../core/errors.js";
import type { RunEvent } from "../events/run-events.js";
import { formatNdjsonLine } from "../events/sinks.js";
import type { ExecutorTimings } from "../executor/kubernetes/context.js";
import { buildJobName } from "../manifests/names.js";
import { SECRET_NAME_PATTERN } from "../secrets/secret.js";
import type { RunDefaults } from "../run/run-defaults.js";
import { readRunCheckpoint, type RunCheckpoint } from "../run/run-checkpoint.js";
import { readRunPlan, serializeRunPlan, settingsFromPlan, type RunPlan } from "../run/run-plan.js";
import { superviseRun, type SuperviseOptions, type SupervisedRun } from "../run/supervise-run.js";
import { loadWorkflowText, type LoadedWorkflow } from "../settings/load-workflow.js";
import { prepareWorkflowRun } from "../settings/prepare-workflow-run.js";
import { buildRunSettings } from "../settings/build-run-settings.js";
import { formatWarning } from "../workflow/workflow-errors.js";
import type { LaunchedLease, LeaseLauncher, LeaseOffer, LeaseOutcome, LeaseProgress } from "./lease-launcher.js";
import { buildLogLines, formatLogLine, type SpindleLogLine } from "./log-lines.js";
import type { SecretPair } from "./mill-messages.js";
import {
  readOfferedPipeline,
  readOfferedWorkflow,
  type OfferedPipeline,
  type OfferedWorkflow,
} from "./pipeline-record.js";

/** Why a mill run restores and saves no `caches` (docs/tangled-mill.md says it at length). */
export const MILL_CACHES_OFF =
  "caches: not kept for mill runs: a `caches` list of keys and paths is knotless's, not spindle's (spindle's workflows declare none; a microvm's map of Nix binary caches is honoured), and the commit is cloned in the pod, after the keys are rendered; the steps run without them";

/** The engines of spindle's mill this executor runs, each as a pod (nixery: a Nixery image; microvm: `engines.microvm` of --config). */
export const MILL_ENGINES = ["nixery", "microvm"] as const;

export interface KubernetesLauncherOptions {
  readonly cluster: RunCluster;
  /** What every run is held to, as `serve` resolves it from the same flags. */
  readonly defaults: RunDefaults;
  /** Each run's files (run.log, log.ndjson, result.json) go under `<runsDir>/<runId>/` while it runs. */
  readonly runsDir: string;
  /** The node architectures the cluster has (`--architectures`); a workflow asking for another is INCOMPATIBLE. Absent: any. */
  readonly architectures?: readonly string[];
  readonly timings?: Partial<ExecutorTimings>;
  readonly warn: (message: string) => void;
}

interface OfferedRun {
  readonly workflow: OfferedWorkflow;
  readonly pipeline: OfferedPipeline;
  readonly loaded: LoadedWorkflow;
}

/** What cleanUp needs of a run a previous process lost. */
interface LeaseRecord {
  readonly namespace?: string;
  readonly jobName: string;
}

export function createKubernetesLauncher(options: KubernetesLauncherOptions): LeaseLauncher {
  const { defaults } = options;
  /** Deletes a run's files on this host and its Job; resolves what became of the Job, in words for a terminal's error. */
  async function cleanUpLease(leaseId: string, text: string): Promise<string> {
    // What the run wrote on this host (its checkout, its logs): the mill's copy of the log is the lease's own.
    await rm(join(options.runsDir, buildLeaseRunId(leaseId)), { recursive: true, force: true }).catch(
      (error: unknown) => options.warn(`lost run ${leaseId}: removing its files failed: ${describeError(error)}`),
    );
    let record: LeaseRecord;
    try {
      record = JSON.parse(text) as LeaseRecord;
    } catch {
      options.warn(`a lost run's record is not JSON: ${text}`);
      return "its Job is not known (its record is not JSON)";
    }
    try {
      const outcome = await options.cluster.deleteJob(record.namespace, record.jobName);
      options.warn(`lost run: Job ${record.jobName} ${outcome === "deleted" ? "deleted" : "was already gone"}`);
      return outcome === "deleted" ? "its Job was deleted" : "its Job was already gone";
    } catch (error) {
      options.warn(
        `lost run: deleting Job ${record.jobName} failed: ${describeError(error)}; gc deletes it once its heartbeat is stale`,
      );
      return `deleting its Job failed (${describeError(error)}; gc deletes it once its heartbeat is stale)`;
    }
  }
  return {
    engines: MILL_ENGINES,
    async check(offer) {
      if (!(MILL_ENGINES as readonly string[]).includes(offer.targetEngine)) {
        return {
          ok: false,
          reason: `engine ${offer.targetEngine} is not run here: this executor runs ${MILL_ENGINES.join(" and ")} workflows as Kubernetes pods`,
        };
      }
      try {
        const plan = await readOffer(offer, options);
        return { ok: true, accepted: { offer, plan } };
      } catch (error) {
        return { ok: false, reason: describeError(error) };
      }
    },
    start(accepted, secrets, onLine, progress) {
      const plan = accepted.plan as OfferedRun;
      const runId = buildLeaseRunId(accepted.offer.leaseId);
      const outDir = join(options.runsDir, runId);
      const record: LeaseRecord = {
        ...(defaults.target.namespace ? { namespace: defaults.target.namespace } : {}),
        jobName: buildJobName(runId),
      };
      return superviseLease(
        JSON.stringify(record),
        outDir,
        { ndjson: 0, log: 0 },
        onLine,
        progress,
        options,
        async () => "no Job was created",
        async () => {
          const prepared = await prepareLeaseRun(plan, runId, outDir, secrets, options);
          // The plan as superviseRun will run it (with its clone), so a restart during the upload clones again.
          const { git } = prepared;
          progress.plan(
            serializeRunPlan(
              git ? { ...prepared.settings, gitCheckout: { ...git.spec, host: git.setting } } : prepared.settings,
            ),
          );
          return prepared;
        },
      );
    },
    resume(left, onLine, progress) {
      let plan: RunPlan;
      let checkpoint: RunCheckpoint | undefined;
      try {
        plan = readRunPlan(left.plan);
        checkpoint = left.checkpoint ? readRunCheckpoint(left.checkpoint.text) : undefined;
      } catch (error) {
        // Nothing to continue it from: end it and leave nothing behind (its Job, its files), saying so in its log.
        const why = `runner-lost: the executor restarted and could not read the run's plan or checkpoint: ${describeError(error)}`;
        onLine({
          kind: "data",
          content: `error: ${why}`,
          time: new Date().toISOString(),
          step_id: -1,
          stream: "stderr",
        });
        return {
          record: left.record,
          cancel: () => undefined,
          done: cleanUpLease(left.leaseId, left.record).then((job) => ({
            status: "failed" as const,
            exitCode: -1,
            error: `${why}; ${job}`,
          })),
        };
      }
      const base = checkpoint
        ? { ndjson: checkpoint.logs.ndjson, log: left.checkpoint!.logLength }
        : { ndjson: 0, log: 0 };
      const leftJob = () => cleanUpLease(left.leaseId, left.record);
      return superviseLease(left.record, plan.settings.outDir, base, onLine, progress, options, leftJob, async () => {
        const { gitCheckout } = plan.settings;
        const { git } = defaults;
        return {
          // The same settings serve re-attaches with (src/run/run-plan.ts): the secrets are read back from the pod.
          settings: settingsFromPlan(plan, [], defaults.hostTar ? { hostTar: defaults.hostTar } : {}),
          ...(gitCheckout && git ? { git: { spec: gitCheckout, setting: git } } : {}),
          resume: { checkpoint, secretNames: plan.secretNames },
        };
      });
    },
    async cleanUp(leaseId, text) {
      await cleanUpLease(leaseId, text);
    },
  };
}

type LeaseRunOptions = Pick<SuperviseOptions, "settings" | "git" | "warnings" | "resume">;

/**
 * Runs a lease's run through superviseRun (as serve runs and re-attaches its runs): its lines to `onLine`, its
 * checkpoints to `progress` with the lease log's length at each. `prepare` makes its settings (a throw fails the run);
 * `leftJob` deletes the Job a cancel before supervision began would otherwise leave (a re-attached run's).
 */
function superviseLease(
  record: string,
  outDir: string,
  base: LogPlace,
  onLine: (line: SpindleLogLine) => void,
  progress: LeaseProgress,
  options: KubernetesLauncherOptions,
  leftJob: () => Promise<string>,
  prepare: () => Promise<LeaseRunOptions>,
): LaunchedLease {
  let supervised: SupervisedRun | undefined;
  let cancelled: string | undefined;
  const tally = createLogTally(base, onLine);
  const done = (async (): Promise<LeaseOutcome> => {
    try {
      const prepared = await prepare();
      if (cancelled !== undefined)
        return { status: "cancelled", exitCode: -1, error: `cancelled: ${cancelled}; ${await leftJob()}` };
      supervised = superviseRun({
        ...prepared,
        cluster: options.cluster,
        sinks: [tally.sink],
        ...(options.timings ? { timings: options.timings } : {}),
        checkpoints: {
          save: (checkpoint) => {
            const logLength = tally.logLengthAt(checkpoint.logs.ndjson);
            if (logLength !== undefined) progress.checkpoint(JSON.stringify(checkpoint), logLength);
          },
        },
        warn: options.warn,
      });
      const result = await supervised.done;
      const error = result.error ?? "";
      return {
        status: result.status === "skipped" ? "success" : result.status,
        exitCode: result.exitCode,
        // The mill's operators read the reason a lost run failed for in the terminal's error.
        error:
          result.errorReason === "runner-lost" && !error.startsWith("runner-lost") ? `runner-lost: ${error}` : error,
      };
    } catch (error) {
      onLine({
        kind: "data",
        content: `error: ${describeError(error)}`,
        time: new Date().toISOString(),
        step_id: -1,
        stream: "stderr",
      });
      return {
        status: cancelled !== undefined ? "cancelled" : "failed",
        exitCode: -1,
        error: describeError(error),
      };
    } finally {
      // The mill keeps the log; the run's own files (its log twice over, result.json) are not needed once it is stored.
      await rm(outDir, { recursive: true, force: true }).catch(() => undefined);
    }
  })();
  return {
    record,
    cancel(reason) {
      if (cancelled !== undefined) return;
      cancelled = reason;
      // The mill wants the terminal within 10 s: stop the step and go straight to the Job's deletion, no outputs collected.
      supervised?.controller.abort(new CancelledError(`cancelled by the mill: ${reason}`));
      supervised?.force.abort(new CancelledError(`cancelled by the mill: ${reason}`));
    },
    done,
  };
}

/** Where the run's log.ndjson and the lease's log file end (bytes). */
interface LogPlace {
  readonly ndjson: number;
  readonly log: number;
}

/**
 * Passes each event's lines to `onLine` and tallies both logs' lengths after it, so that a checkpoint (which names
 * log.ndjson's length) gives the lease log's length at the same place: every event reaches both, in the same order.
 */
function createLogTally(
  base: LogPlace,
  onLine: (line: SpindleLogLine) => void,
): { sink: (event: RunEvent) => void; logLengthAt: (ndjson: number) => number | undefined } {
  let ndjson = base.ndjson;
  let log = base.log;
  // The places since the last checkpoint, oldest first (one an event); checkpoints come in order, so older ones go.
  let places: LogPlace[] = [base];
  return {
    sink(event) {
      const text = formatNdjsonLine(event);
      if (text !== undefined) ndjson += Buffer.byteLength(text);
      for (const line of buildLogLines(event)) {
        log += Buffer.byteLength(formatLogLine(line));
        onLine(line);
      }
      if (places.at(-1)!.ndjson === ndjson) places[places.length - 1] = { ndjson, log };
      else places.push({ ndjson, log });
    },
    logLengthAt(length) {
      for (let index = places.length - 1; index >= 0; index -= 1) {
        if (places[index]!.ndjson !== length) continue;
        const place = places[index]!;
        places = places.slice(index);
        return place.log;
      }
      return undefined;
    },
  };
}

/** The run id of a lease: `mill-` and the lease id in the letters a Job name takes. */
export function buildLeaseRunId(leaseId: string): string {
  return `mill-${leaseId.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`.slice(0, 128);
}

/** Reads and validates the offer as this runner would run it; throws (PipelineRecordError, WorkflowError, InputError) with the reason in words. */
async function readOffer(offer: LeaseOffer, options: KubernetesLauncherOptions): Promise<OfferedRun> {
  const workflow = readOfferedWorkflow(offer.rawWorkflowJson);
  const pipeline = readOfferedPipeline(offer.rawPipelineJson, offer.knot, offer.rkey);
  const resolveOptions = {
    ...(options.defaults.runner ? { runner: options.defaults.runner } : {}),
    ...(options.defaults.nixery !== undefined ? { nixeryBase: options.defaults.nixery } : {}),
  };
  let loaded = await loadWorkflowText(workflow.raw, workflow.name, resolveOptions);
  // The mill chose the engine (a file without `engine:` is nixery to spindle): a file that does not say one is read as that engine.
  if (loaded.parsed.engineFrom !== "engine" && loaded.resolved.engine !== offer.targetEngine)
    loaded = await loadWorkflowText(`engine: ${offer.targetEngine}\n${workflow.raw}`, workflow.name, resolveOptions);
  if (loaded.resolved.engine !== offer.targetEngine)
    throw new Error(
      `workflow ${workflow.name} says engine ${loaded.resolved.engine}, the mill offered it as ${offer.targetEngine}`,
    );
  const arch = loaded.resolved.placement.nodeSelector?.["kubernetes.io/arch"];
  if (arch !== undefined && options.architectures !== undefined && !options.architectures.includes(arch)) {
    throw new Error(`architecture ${arch} is not served here (this cluster runs ${options.architectures.join(", ")})`);
  }
  if (
    !workflow.clone.skip &&
    !loaded.resolved.clone.skip &&
    (pipeline.cloneUrl === undefined || pipeline.sha === undefined)
  ) {
    throw new Error(
      "the pipeline record gives no repository and commit to clone, and the workflow does not skip the clone",
    );
  }
  if (!workflow.clone.skip && !loaded.resolved.clone.skip && options.defaults.git === undefined)
    throw new Error("this executor has no git to clone with");
  return { workflow, pipeline, loaded };
}

/** The run's settings and clone, built as `serve` builds a submission's; the secrets in memory only. */
async function prepareLeaseRun(
  plan: OfferedRun,
  runId: string,
  outDir: string,
  secrets: readonly SecretPair[],
  options: KubernetesLauncherOptions,
): Promise<Pick<Parameters<typeof superviseRun>[0], "settings" | "git" | "warnings">> {
  const { defaults } = options;
  const skip = plan.workflow.clone.skip || plan.loaded.resolved.clone.skip;
  // The knot matched the workflow already: `when` is not evaluated again, but the trigger still gives the run's variables.
  const loaded: LoadedWorkflow = { ...plan.loaded, resolved: { ...plan.loaded.resolved, when: undefined } };
  const { plan: runPlan } = await prepareWorkflowRun(loaded, {
    runId,
    trigger: plan.pipeline.trigger,
    cachesOff: true,
  });
  const checkoutDir = skip ? join(outDir, "empty-checkout") : join(outDir, "checkout");
  const usable = secrets.filter((secret) => SECRET_NAME_PATTERN.test(secret.key) && secret.value !== "");
  for (const secret of secrets)
    if (!usable.includes(secret))
      options.warn(
        `lease run ${runId}: secret ${JSON.stringify(secret.key)} skipped (an empty value, or a name that is not a variable name)`,
      );
  const settings = buildRunSettings({
    runId,
    target: defaults.target,
    plan: runPlan,
    checkoutDir,
    outDir,
    podTimeoutMs: defaults.podTimeoutMs,
    ...(defaults.podIdleTimeoutMs === undefined ? {} : { podIdleTimeoutMs: defaults.podIdleTimeoutMs }),
    maxOutputBytes: defaults.maxOutputBytes,
    maxLogBytes: defaults.maxLogBytes,
    secrets: usable.map((secret) => ({ name: secret.key, value: secret.value })),
    ...(defaults.keepWarm ? { keepWarm: defaults.keepWarm } : {}),
    ...(defaults.claimWarm === false ? { claimWarm: false } : {}),
    ...(defaults.hostTar ? { hostTar: defaults.hostTar } : {}),
    ...(defaults.owner ? { owner: defaults.owner } : {}),
    ...(defaults.runner ? { pod: defaults.runner.config.pod } : {}),
  });
  const withInputs =
    plan.pipeline.inputs.length === 0 ? settings : { ...settings, env: [...settings.env, ...plan.pipeline.inputs] };
  const clone = plan.workflow.clone;
  return {
    settings: withInputs,
    ...(!skip && defaults.git
      ? {
          git: {
            spec: {
              url: plan.pipeline.cloneUrl!,
              sha: plan.pipeline.sha!,
              depth: clone.depth ?? plan.loaded.resolved.clone.depth ?? 1,
              submodules: clone.submodules,
              tags: clone.tags,
            },
            setting: defaults.git,
          },
        }
      : {}),
    warnings: [
      ...plan.loaded.warnings.map(formatWarning),
      ...((plan.loaded.resolved.caches?.length ?? 0) > 0 ? [MILL_CACHES_OFF] : []),
    ],
  };
}
