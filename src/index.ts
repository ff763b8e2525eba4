// The library API that the knotless-run daemon embeds: run a workflow, or drive the executor step by step.
export { runWorkflow, type RunSettings, type RunWorkflowOptions } from "./run/run-workflow.js";
export { createOutputBudget, DEFAULT_MAX_LOG_BYTES, type LogCounts, type OutputBudget } from "./events/output-budget.js";
export { Kubectl, type KubectlOptions, type SpawnFunction } from "./k8s/kubectl.js";
export type { Executor, RunPod, StepOutcome, TeardownReport, UploadSummary } from "./executor/executor.js";
export { ScanError, scanUploadTrees, type TreeScan, type UploadTrees } from "./transfer/scan-tree.js";
export { KubernetesExecutor, buildRunManifest, type CrashTeardown } from "./executor/kubernetes-executor.js";
export { DEFAULT_TIMINGS, type ExecutorContext, type ExecutorSettings, type ExecutorTimings } from "./executor/context.js";
export type { RunEvent, RunEventSink, RunStatus, StepStatus } from "./events/run-events.js";
export { buildJobManifest, type JobManifestInput } from "./k8s/manifest.js";
export { parseStepsFile, type StepSpec } from "./input/steps-file.js";
export { planKubectlCalls, type PlannedCall } from "./plan/call-plan.js";
export { buildRunResult, type RunResult, type StepRecord } from "./result/run-result.js";
export type { ReadonlyList } from "./util/readonly-list.js";
export { CancelledError, InfraError, InputError, type InfraReason } from "./errors.js";
export { buildJobName } from "./k8s/names.js";
