// The one adapter from the mill's world to the run path: an offer checked as a workflow this runner can run, a commit run as one Job through superviseRun (as `serve` runs it).
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { RunCluster } from "../cluster/cluster.js";
import { CancelledError, describeError } from "../core/errors.js";
import type { RunEvent } from "../events/run-events.js";
import type { ExecutorTimings } from "../executor/kubernetes/context.js";
import { buildJobName } from "../manifests/names.js";
import { SECRET_NAME_PATTERN } from "../secrets/secret.js";
import type { RunDefaults } from "../run/run-defaults.js";
import { superviseRun, type SupervisedRun } from "../run/supervise-run.js";
import { loadWorkflowText, type LoadedWorkflow } from "../settings/load-workflow.js";
import { prepareWorkflowRun } from "../settings/prepare-workflow-run.js";
import { buildRunSettings } from "../settings/build-run-settings.js";
import { formatWarning } from "../workflow/workflow-errors.js";
import type { LeaseLauncher, LeaseOffer, LeaseOutcome } from "./lease-launcher.js";
import { buildLogLines } from "./log-lines.js";
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

interface LeasePlan {
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
        const plan = await planOffer(offer, options);
        return { ok: true, accepted: { offer, plan } };
      } catch (error) {
        return { ok: false, reason: describeError(error) };
      }
    },
    start(accepted, secrets, onLine) {
      const plan = accepted.plan as LeasePlan;
      const runId = buildLeaseRunId(accepted.offer.leaseId);
      const record: LeaseRecord = {
        ...(defaults.target.namespace ? { namespace: defaults.target.namespace } : {}),
        jobName: buildJobName(runId),
      };
      let supervised: SupervisedRun | undefined;
      let cancelled: string | undefined;
      const sink = (event: RunEvent): void => {
        for (const line of buildLogLines(event)) onLine(line);
      };
      const done = (async (): Promise<LeaseOutcome> => {
        const outDir = join(options.runsDir, runId);
        try {
          const prepared = await prepareLeaseRun(plan, runId, outDir, secrets, options);
          if (cancelled !== undefined) return { status: "cancelled", exitCode: -1, error: `cancelled: ${cancelled}` };
          supervised = superviseRun({
            ...prepared,
            cluster: options.cluster,
            sinks: [sink],
            ...(options.timings ? { timings: options.timings } : {}),
            warn: options.warn,
          });
          const result = await supervised.done;
          return {
            status: result.status === "skipped" ? "success" : result.status,
            exitCode: result.exitCode,
            error: result.error ?? "",
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
        record: JSON.stringify(record),
        cancel(reason) {
          if (cancelled !== undefined) return;
          cancelled = reason;
          // The mill wants the terminal within 10 s: stop the step and go straight to the Job's deletion, no outputs collected.
          supervised?.controller.abort(new CancelledError(`cancelled by the mill: ${reason}`));
          supervised?.force.abort(new CancelledError(`cancelled by the mill: ${reason}`));
        },
        done,
      };
    },
    async cleanUp(text) {
      let record: LeaseRecord;
      try {
        record = JSON.parse(text) as LeaseRecord;
      } catch {
        options.warn(`a lost run's record is not JSON: ${text}`);
        return;
      }
      try {
        const outcome = await options.cluster.deleteJob(record.namespace, record.jobName);
        options.warn(`lost run: Job ${record.jobName} ${outcome === "deleted" ? "deleted" : "was already gone"}`);
      } catch (error) {
        options.warn(
          `lost run: deleting Job ${record.jobName} failed: ${describeError(error)}; gc deletes it once its heartbeat is stale`,
        );
      }
    },
  };
}

/** The run id of a lease: `mill-` and the lease id in the letters a Job name takes. */
export function buildLeaseRunId(leaseId: string): string {
  return `mill-${leaseId.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`.slice(0, 128);
}

/** Reads and validates the offer as this runner would run it; throws (PipelineRecordError, WorkflowError, InputError) with the reason in words. */
async function planOffer(offer: LeaseOffer, options: KubernetesLauncherOptions): Promise<LeasePlan> {
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
  plan: LeasePlan,
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
