// The calls of a successful run, in order, and those of `warm`, in no transport's words (each transport describes them:
// cluster/transports/format-calls.ts): pure functions printed by --dry-run.
import { DEFAULT_TIMINGS, type RunSettings } from "../executor/kubernetes/context.js";
import { checkStepEnvironment } from "../workflow/step-environment.js";
import type { ClusterCallPlan, PlannedCall } from "../cluster/planned-call.js";
import {
  buildPlaceholderSelector,
  buildRunSelector,
  HEARTBEAT_ANNOTATION,
  KEPT_ANNOTATION,
} from "../manifests/labels.js";
import { PLACEHOLDER_NAME_PREFIX } from "../manifests/placeholder-manifest.js";
import { buildUploadCommand, helperCommand } from "../pod/helper-script.js";
import { cacheHelperCommand } from "../pod/cache-script.js";
import { formatPvcNonce } from "../cache/pvc-cache.js";
import {
  buildPvcEvictCommand,
  buildPvcListCommand,
  buildPvcRestoreCommand,
  buildPvcSaveCommand,
} from "../cache/pvc-scripts.js";
import { selectArtifact } from "../executor/kubernetes/select-artifact.js";

/** The pod name is only known once the Job made it; the plan shows this placeholder. */
export const PLANNED_POD = "<pod>";
/** The time an annotation records is the call's own; the plan shows this placeholder. */
export const PLANNED_TIME = "<now>";
/** Which warm placeholder a run claims is only known once it has listed them. */
export const PLANNED_PLACEHOLDER = `${PLACEHOLDER_NAME_PREFIX}<slot>`;
const CLAIM_PRECONDITIONS = "preconditions on the listed placeholder's uid and resourceVersion";
const CLAIM_BODY = `DeleteOptions: background propagation, ${CLAIM_PRECONDITIONS}`;

/** One exec into the run pod. */
function planPodExec(command: readonly string[], stdin: boolean): { plan: ClusterCallPlan } {
  return { plan: { call: "exec", pod: PLANNED_POD, command, stdin } };
}

/** Who packs the upload; a dry run spawns nothing, so the host tar is named, not probed. */
function describePacker(hostTar: string | undefined): string {
  return hostTar === undefined
    ? "packed by the runner"
    : `packed by ${hostTar} if it is GNU tar 1.29 or later, else by the runner`;
}

/** The secrets exec, when the run has secrets: its stdin described by count and names, never by value. */
function planSecretsCall(settings: RunSettings): PlannedCall[] {
  const secrets = settings.secrets ?? [];
  if (secrets.length === 0) return [];
  const names = secrets.map((secret) => secret.name).join(", ");
  return [
    {
      ...planPodExec(helperCommand.takeSecrets(), true),
      stdin: `${secrets.length} ${secrets.length === 1 ? "secret" : "secrets"} (${names}) → /knotless-secrets, memory-backed`,
    },
  ];
}

/** The PVC backend's execs (`--cache-pvc`): every command runs in the pod on the claim, no archive crosses kubectl. */
function planPvcCacheCalls(
  settings: RunSettings,
  backend: { readonly repo: string; readonly claim: string; readonly maxBytes: number },
): { restore: PlannedCall[]; save: PlannedCall[] } {
  const caches = settings.caches ?? [];
  const nonce = formatPvcNonce(settings.runId);
  const exec = (argv: string[]) => planPodExec(argv, false);
  return {
    restore: caches.flatMap((cache) => [
      {
        ...exec(buildPvcListCommand(backend.repo)),
        note: `cache ${JSON.stringify(cache.key)}: lists the repository's entries on the claim ${backend.claim}`,
      },
      {
        ...exec(buildPvcRestoreCommand(backend.repo, cache.key, nonce)),
        note: "only on a hit (the entry selectEntry picks, shown here as the exact key): sha256 checked in the pod, then extracted at /",
      },
    ]),
    save: caches.flatMap((cache) => [
      // createdAt 0 stands for the save's time: the plan stays a function of the settings.
      {
        ...exec(
          buildPvcSaveCommand({
            repo: backend.repo,
            key: cache.key,
            paths: cache.paths,
            maxBytes: backend.maxBytes,
            createdAt: 0,
            nonce,
          }),
        ),
        note: `after a successful run, unless ${JSON.stringify(cache.key)} was hit exactly: packed on the claim, committed with ln (another run's save of the key first: exists)`,
      },
      {
        ...exec(buildPvcEvictCommand(backend.maxBytes, nonce)),
        note: "only after a save: least recently used entries of the repository's directory on the claim removed down to the budget",
      },
    ]),
  };
}

/** The restore and save execs of a host-side cache store (`--cache-dir`): the archive streams through kubectl. */
function planCacheCalls(settings: RunSettings): { restore: PlannedCall[]; save: PlannedCall[] } {
  if (settings.cacheBackend?.kind === "pvc") return planPvcCacheCalls(settings, settings.cacheBackend);
  if (settings.cacheBackend?.kind !== "dir") return { restore: [], save: [] };
  const caches = settings.caches ?? [];
  return {
    restore: caches.map((cache) => ({
      // The entry's compression is known only once it was looked up: shown here as zstd.
      ...planPodExec(cacheHelperCommand.restore("zstd", cache.paths), true),
      stdin: `the stored entry of ${JSON.stringify(cache.key)}${cache.restoreKeys.length > 0 ? " (or of the first matching fallback prefix)" : ""}: a zstd or gzip tar from the cache directory, checked on its way in`,
      note: "only on a hit, with the entry's compression (zstd or gzip): extracted at /, proven whole by zstd's or gunzip's checksums; a pod without zstd says so at once, and the entry is sent again decompressed on this host (cache-restore none)",
    })),
    save: caches.map((cache) => ({
      ...planPodExec(cacheHelperCommand.save(cache.paths), false),
      note: `after a successful run, unless ${JSON.stringify(cache.key)} was hit exactly: tar | zstd -1 of the paths that exist where the image has zstd (6x faster than gzip -1 at the same size), else gzip -1; checked as hostile on its way into the store, its compression told by its first bytes`,
    })),
  };
}

/** The list and pack execs of each artifact (the files are matched on this host in between). */
function planArtifactCalls(settings: RunSettings): PlannedCall[] {
  return (settings.artifacts ?? []).flatMap((artifact) => {
    const plan = selectArtifact(artifact);
    if ("problem" in plan) return [];
    const when = `when: ${artifact.when}`;
    return [
      {
        ...planPodExec(cacheHelperCommand.listFiles(plan.listRoots), false),
        note: `artifact ${artifact.name} (${when}): lists the files under the patterns' prefixes`,
      },
      {
        ...planPodExec(cacheHelperCommand.packFiles(plan.packRoot), true),
        stdin: `the matching files, one per line`,
        note: `only when some match: → <out>/artifacts/${artifact.name}/`,
      },
    ];
  });
}

/**
 * Every call a successful run makes (each transport describes it with the builders it makes it with). The cancel watch and the heartbeat
 * run alongside the others until teardown, the heartbeat from the create, the watch from the pod's start. Refuses, as the run would (InputError), an environment
 * the steps cannot carry.
 */
export function planKubectlCalls(
  settings: RunSettings,
  options: { readonly heartbeatIntervalMs?: number } = {},
): PlannedCall[] {
  checkStepEnvironment(settings);
  const caches = planCacheCalls(settings);
  const every = `${(options.heartbeatIntervalMs ?? DEFAULT_TIMINGS.heartbeatIntervalMs) / 1000}s`;
  const upload = [
    `the checkout → /work`,
    ...(settings.sharedStepsDir ? [`the shared steps → /steps`] : []),
    `the runner's files → /knotless`,
  ].join(", ");
  const claim: PlannedCall[] =
    settings.claimWarm === false
      ? []
      : [
          {
            plan: { call: "listJobs", selector: buildPlaceholderSelector(), beforeCreate: true },
            note: "looks for a live warm placeholder whose requests cover the run's",
          },
          {
            plan: {
              call: "claimPlaceholder",
              name: PLANNED_PLACEHOLDER,
              preconditions: CLAIM_PRECONDITIONS,
              beforeCreate: true,
            },
            stdin: CLAIM_BODY,
            note: "only when one covers them: the delete is the claim (NotFound or Conflict: another run took it, the next one is tried, else the run is cold)",
          },
        ];
  const keepWarm: PlannedCall[] = settings.keepWarm
    ? [
        {
          plan: { call: "listJobs", selector: buildPlaceholderSelector() },
          note: `--keep-warm: after the delete, counts the placeholders (at most --max-warm ${settings.keepWarm.maxWarm})`,
        },
        {
          plan: { call: "createJob", body: "Job (the placeholder manifest above)" },
          stdin: `the placeholder manifest above (JSON), named ${PLANNED_PLACEHOLDER} by a free slot`,
          note: "unless one of the run's size with at least half the time left is there; with no slot free, the one ending first is claimed and made anew",
        },
      ]
    : [];
  return [
    ...claim,
    { plan: { call: "createJob", body: "Job (the manifest above)" }, stdin: "the Job manifest above (JSON)" },
    ...(settings.disruptionBudget
      ? [
          {
            plan: { call: "createBudget" } as const,
            stdin:
              "the run's PodDisruptionBudget (JSON): maxUnavailable 0 for the run's pod, owned by the Job (pod.disruptionBudget)",
          },
        ]
      : []),
    {
      plan: { call: "watchJob", job: settings.jobName },
      note: "once the pod runs (or 2s into a longer pod wait) until teardown, started again when it ends: notices a cancel requested through the cluster",
    },
    {
      plan: { call: "annotateJob", job: settings.jobName, annotations: { [HEARTBEAT_ANNOTATION]: PLANNED_TIME } },
      note: `the heartbeat: at once after the create (refused: the run fails, exit 3), then every ${every} until teardown`,
    },
    {
      plan: { call: "watchPods", selector: buildRunSelector(settings.runIdLabel) },
      note: "until the pod runs: kubectl polls it; the API transport watches the namespace's pods of ours once for every run, and picks this run's by its run-id label",
    },
    {
      plan: { call: "watchEvents", kind: "Pod", name: PLANNED_POD },
      note: "while the pod is Pending (its Job's events before the pod exists): kubectl lists them every few seconds; the API transport watches the namespace's pod events once for every run, and picks this pod's by name",
    },
    {
      ...planPodExec(buildUploadCommand(), true),
      stdin: `tar of ${upload}, ${describePacker(settings.hostTar?.binary)}`,
    },
    ...planSecretsCall(settings),
    ...caches.restore,
    ...settings.steps.map((step, index) => ({
      ...planPodExec(helperCommand.run(index), true),
      note: `step ${index + 1}: ${step.name}`,
      stdin: "held open, nothing written: its end tells the pod the runner stopped following",
    })),
    ...caches.save,
    {
      ...planPodExec(helperCommand.packOutputs(), false),
      note: `${(settings.secrets?.length ?? 0) > 0 ? "removes the secrets from the pod, then " : ""}tar of /outputs → <out>/outputs`,
    },
    ...planArtifactCalls(settings),
    settings.keep
      ? {
          plan: { call: "annotateJob", job: settings.jobName, annotations: { [KEPT_ANNOTATION]: PLANNED_TIME } },
          note: "--keep: the Job stays (gc spares it while it lasts)",
        }
      : { plan: { call: "deleteJob", job: settings.jobName } },
    ...(settings.disruptionBudget
      ? [
          {
            plan: { call: "deleteBudget", name: settings.jobName } as const,
            note: "the run's PodDisruptionBudget (kept Jobs too: a kept pod must not hold up a drain)",
          },
        ]
      : []),
    ...(settings.keep ? [] : keepWarm),
  ];
}

/** The calls of `warm --count N`: one list, then one create per missing placeholder (and a claim per finished one in the way). */
export function planWarmCalls(spec: { readonly count: number; readonly maxWarm: number }): PlannedCall[] {
  return [
    {
      plan: { call: "listJobs", selector: buildPlaceholderSelector() },
      note: `counts the live placeholders: those of this size count toward --count ${spec.count}, all of them toward --max-warm ${spec.maxWarm}`,
    },
    {
      plan: { call: "claimPlaceholder", name: PLANNED_PLACEHOLDER, preconditions: CLAIM_PRECONDITIONS },
      stdin: CLAIM_BODY,
      note: "only for a finished placeholder whose slot is needed",
    },
    {
      plan: { call: "createJob", body: "Job (the placeholder manifest above)" },
      stdin: `the placeholder manifest above (JSON), named ${PLANNED_PLACEHOLDER} by a free slot`,
      note: "once per missing placeholder; AlreadyExists means another caller filled the slot",
    },
  ];
}

/** The call of `warm --release`. */
export function planReleaseCalls(): PlannedCall[] {
  return [
    {
      plan: { call: "deleteJobsBySelector", selector: buildPlaceholderSelector(), each: PLANNED_PLACEHOLDER },
      note: "deletes every warm placeholder in the namespace, and its pod",
    },
  ];
}
