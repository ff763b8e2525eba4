// The library API that the knotless-run daemon embeds: run a workflow, drive the executor step by step, or keep warm capacity.
export { runWorkflow, type RunWorkflowOptions } from "./run/run-workflow.js";
export type { RunSettings } from "./settings/run-settings.js";
export {
  createOutputBudget,
  DEFAULT_MAX_LOG_BYTES,
  type LogCounts,
  type OutputBudget,
} from "./events/output-budget.js";
export { Kubectl, type KubectlOptions, type SpawnFunction } from "./cluster/kubectl/kubectl.js";
// The cluster seam: pass runWorkflow a `cluster` (any transport).
export type {
  CallOptions,
  Cluster,
  ClusterTarget,
  Namespace,
  ServerVersion,
  TransportFacts,
  WatchEvent,
  WatchOptions,
} from "./cluster/cluster.js";
export type { ExecEnd, ExecRequest, ExecSession, ExecStdin } from "./cluster/exec.js";
export {
  AlreadyExistsError,
  ClusterError,
  ConfigError,
  ConflictError,
  CutStreamError,
  ForbiddenError,
  InvalidError,
  NotFoundError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  UnreadableAnswerError,
  type ClusterErrorCode,
  type UnavailableReason,
} from "./cluster/errors.js";
export { KubectlCluster, type KubectlConnection } from "./cluster/kubectl/kubectl-cluster.js";
// The API transport (the CLI's default): open one per cluster and identity and share it between runs; close it last.
export { openApiCluster, type OpenApiClusterOptions } from "./cluster/api/open-api-cluster.js";
export type { ApiCluster } from "./cluster/api/api-cluster.js";
export type { ApiCall } from "./cluster/api/api-client.js";
export type { KubeconfigSelection } from "./cluster/api/kubeconfig.js";
export type { Executor, RunPod, StepOutcome, TeardownReport, UploadSummary } from "./executor/executor.js";
export { ScanError, scanUploadTrees, type TreeScan, type UploadTrees } from "./transfer/scan-tree.js";
export { KubernetesExecutor, buildRunManifest, type CrashTeardown } from "./executor/kubernetes/kubernetes-executor.js";
export {
  DEFAULT_TIMINGS,
  type ExecutorContext,
  type ExecutorSettings,
  type ExecutorTimings,
} from "./executor/kubernetes/context.js";
export type { RunEvent, RunEventSink, RunStatus, StepStatus } from "./events/run-events.js";
export { buildJobManifest, type JobManifestInput } from "./manifests/manifest.js";
export { parseStepsFile, type StepSpec } from "./workflow/steps-file.js";
export { planKubectlCalls } from "./dry-run/call-plan.js";
export type { ClusterCallPlan, PlannedCall } from "./cluster/planned-call.js";
export { describePlannedCalls, type DescribedCall } from "./cluster/transports/format-calls.js";
export { buildRunResult, type RunResult, type StepRecord } from "./run/run-result.js";
export type { ReadonlyList } from "./core/readonly-list.js";
export { CancelledError, InfraError, InputError, type InfraReason } from "./core/errors.js";
export { buildJobName } from "./manifests/names.js";
export { claimPlaceholder, type Capacity, type ClaimOutcome } from "./warm/claim-placeholder.js";
export type { WarmDeps } from "./warm/warm-deps.js";
export { listPlaceholders, topUpPlaceholders, type WarmReport, type WarmSpec } from "./warm/top-up.js";
export { releasePlaceholders, type ReleaseReport } from "./warm/release.js";
export {
  coversRequest,
  isLive,
  isPlaceholderJob,
  readJobDeadline,
  readPlaceholder,
  readPlaceholderList,
  type CapacityRequest,
  type Placeholder,
  type PlaceholderState,
} from "./warm/placeholder.js";
export {
  buildPlaceholderManifest,
  buildPlaceholderName,
  PLACEHOLDER_NAME_PREFIX,
  type PlaceholderManifestInput,
} from "./manifests/placeholder-manifest.js";
export {
  buildPlaceholderSelector,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  ROLE_LABEL,
  WARM_ROLE,
} from "./manifests/labels.js";
export { planReleaseCalls, planWarmCalls } from "./dry-run/call-plan.js";
export {
  judgeJob,
  readJobFacts,
  readJobRole,
  readFinished,
  type GcPolicy,
  type GcVerdict,
  type JobFacts,
  type JobRole,
} from "./ops/classify-job.js";
export { requestRunCancel, type CancelOutcome } from "./ops/cancel-run.js";
export { runGc, type GcReport } from "./ops/gc.js";
export { runDoctor, type DoctorReport } from "./ops/doctor/run-doctor.js";
export type { ProcessIdentity } from "./manifests/owner.js";
// Workflow files as the daemon has them: text with a name for the error positions, the trigger and the secrets as
// typed values; RunSettings.secrets carries them to runWorkflow, which masks them everywhere.
export { loadWorkflowText, type LoadedWorkflow } from "./settings/load-workflow.js";
export { ForeignWorkflowError, WorkflowError } from "./workflow/workflow-errors.js";
export { DEFAULT_RUNNER_CONFIG, type RunnerConfig, type RunnerConfigSource } from "./config/runner-config.js";
export { parseRunnerConfig } from "./config/read-runner-config.js";
export { matchWorkflow, type Trigger } from "./workflow/match-trigger.js";
export {
  prepareWorkflowRun,
  type PrepareWorkflowRunInput,
  type PreparedWorkflowRun,
} from "./settings/prepare-workflow-run.js";
export { buildRunSettings, type RunSettingsInput } from "./settings/build-run-settings.js";
export { buildRunIdLabel } from "./manifests/names.js";
export {
  planWorkflowRun,
  RUN_DEFAULTS,
  type RunOverrides,
  type WorkflowRunPlan,
  type WorkflowSummary,
} from "./settings/plan-workflow-run.js";
export type { Secret } from "./secrets/secret.js";
export type { CacheBackend } from "./executor/kubernetes/context.js";
export type { CacheSpec, CacheReport } from "./workflow/cache-types.js";
export type { ArtifactSpec, ArtifactReport } from "./workflow/artifact-types.js";
export { createDirStore } from "./cache/dir-store.js";
export { openCacheDriver } from "./cache/open-cache-driver.js";
export { createHostCacheDriver, type HostCacheDriverOptions } from "./cache/host-cache-driver.js";
export type { CacheDriver } from "./cache/cache-driver.js";
