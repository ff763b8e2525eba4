// The library's public API (docs/library.md): what a program that runs workflows itself needs, and nothing else.

// --- Running a workflow -----------------------------------------------------------------------------------------
export { runWorkflow, type RunWorkflowOptions } from "./run/run-workflow.js";
// The whole path `run` and serve take: the run's log files, its cache driver, runWorkflow, result.json written.
export { launchRun, openRunLogFiles, type LaunchOptions, type RunControls } from "./run/launch.js";
export type { ClosableSink } from "./events/sinks.js";

// --- A run's settings, from a workflow file (or a steps file) -----------------------------------------------------
export { loadWorkflowText, type LoadedWorkflow } from "./settings/load-workflow.js";
export { prepareWorkflowRun, type PrepareWorkflowRunInput, type PreparedRun } from "./settings/prepare-workflow-run.js";
export { planWorkflowRun, type RunOverrides, type PlannedRun } from "./settings/plan-workflow-run.js";
export { buildRunSettings, type RunSettingsInput } from "./settings/build-run-settings.js";
export type { RunSettings } from "./executor/kubernetes/context.js";
export { buildJobName, buildRunIdLabel } from "./manifests/names.js";
export { parseStepsFile, type StepSpec } from "./workflow/steps-file.js";
export { matchWorkflow, type Trigger } from "./workflow/match-trigger.js";
export { DEFAULT_RUNNER_CONFIG, type RunnerConfig, type RunnerConfigSource } from "./config/runner-config.js";
export { parseRunnerConfig } from "./config/read-runner-config.js";
export type { Secret } from "./secrets/secret.js";
export type { ProcessIdentity } from "./manifests/owner.js";
export type { CacheBackend } from "./executor/kubernetes/context.js";
export type { CacheReport, CacheSpec } from "./workflow/cache-types.js";
export type { ArtifactReport, ArtifactSpec } from "./workflow/artifact-types.js";

// --- Validation: workflow files checked without a cluster, as `validate` does ---------------------------------------
export {
  checkWorkflowText,
  validateWorkflowPaths,
  type FileCheck,
  type ValidateReport,
} from "./settings/validate-files.js";
export { ForeignWorkflowError, WorkflowError } from "./workflow/workflow-errors.js";
export { CancelledError, InfraError, InputError, type InfraReason } from "./core/errors.js";

// --- The result and the events ------------------------------------------------------------------------------------
export type { RunResult, StepRecord } from "./run/run-result.js";
export type { ReadonlyList } from "./core/readonly-list.js";
export type { RunEvent, RunEventSink, RunStatus, StepStatus } from "./events/run-events.js";
export {
  createOutputBudget,
  DEFAULT_MAX_LOG_BYTES,
  type LogCounts,
  type OutputBudget,
} from "./events/output-budget.js";

// --- The cluster: opened once per cluster and identity, shared by every run of the process ---------------------------
export {
  openCluster,
  type CallListeners,
  type ClusterSetting,
  type TransportName,
} from "./cluster/transports/open-cluster.js";
export { openApiCluster, type OpenApiClusterOptions } from "./cluster/api/open-api-cluster.js";
export type { ApiCluster } from "./cluster/api/api-cluster.js";
export type { ApiCall } from "./cluster/api/api-client.js";
export type { KubeconfigSelection } from "./cluster/api/kubeconfig.js";
// The seam whole, its consumers' interfaces and its exec types: for a caller, and for an implementation of its own.
export type * from "./cluster/cluster.js";
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

// --- The executor contract, and its Kubernetes implementation for a caller that drives it step by step --------------
export type {
  CrashTeardown,
  Executor,
  ExecutorCrashPath,
  RunPod,
  StepOutcome,
  TeardownReport,
  UploadSummary,
} from "./executor/executor.js";
export { KubernetesExecutor, buildRunManifest } from "./executor/kubernetes/kubernetes-executor.js";
export { DEFAULT_TIMINGS, type ExecutorContext, type ExecutorTimings } from "./executor/kubernetes/context.js";
export { ScanError, scanUploadTrees, type TreeScan, type UploadTrees } from "./transfer/scan-tree.js";

// --- Caches -------------------------------------------------------------------------------------------------------
export { openCacheDriver } from "./cache/open-cache-driver.js";
export { createHostCacheDriver, type HostCacheDriverOptions } from "./cache/host-cache-driver.js";
export { createDirStore } from "./cache/dir-store.js";
export type { CacheDriver } from "./cache/cache-driver.js";

// --- The dry run: the calls a run would make, in both transports' words -------------------------------------------
export { planKubectlCalls } from "./dry-run/call-plan.js";
export type { ClusterCallPlan, PlannedCall } from "./cluster/planned-call.js";
export { describePlannedCalls, type DescribedCall } from "./cluster/transports/format-calls.js";

// --- Operator functions and warm capacity -----------------------------------------------------------------------------
export { runDoctor, type DoctorReport } from "./ops/doctor/run-doctor.js";
export { requestRunCancel, type CancelOutcome } from "./ops/cancel-run.js";
export { runGc, type GcReport } from "./ops/gc.js";
export type { WarmDeps } from "./warm/warm-deps.js";
export { listPlaceholders, topUpPlaceholders, type WarmReport, type WarmSpec } from "./warm/top-up.js";
export { releasePlaceholders, type ReleaseReport } from "./warm/release.js";
export type { Placeholder } from "./warm/placeholder.js";
