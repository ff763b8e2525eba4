// Runs a workflow in-process through the library API, through a real kubectl executable (fake or real) or the API transport, collecting events.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunEvent } from "../../src/events/run-events.js";
import type { ExecutorTimings } from "../../src/executor/kubernetes/context.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import { openApiCluster } from "../../src/cluster/api/open-api-cluster.js";
import type { Cluster } from "../../src/cluster/cluster.js";
import { runWorkflow, type RunWorkflowOptions } from "../../src/run/run-workflow.js";
import type { RunResult } from "../../src/run/run-result.js";
import type { HostTarSetting } from "../../src/transfer/host-tar.js";
import { exampleSettings } from "./example-settings.js";
import { makeWorkspace } from "./run-cli.js";

/** The host's tar with this process's environment, as the CLI resolves it without KNOTLESS_TAR. */
export const HOST_TAR: HostTarSetting = { binary: "tar", env: process.env };

/** Short timings so fault tests finish in seconds. */
export const FAST_TIMINGS: Partial<ExecutorTimings> = {
  imagePullGraceMs: 1500,
  execReadyBudgetMs: 20_000,
  killGraceSeconds: 1,
  podPollMs: [100, 200, 300],
};

export interface LibraryRun {
  readonly result: RunResult;
  readonly events: RunEvent[];
  readonly out: string;
  /** Step output by step index, concatenated in arrival order. */
  readonly output: (index: number, stream?: "stdout" | "stderr") => string;
}

/**
 * Runs the steps through the library: over `kubectlPath` (the kubectl transport), or with `transport: "api"` over the
 * API transport on `kubeconfig` (opened for the run and closed after it; `kubectlPath` is then unused).
 */
export async function runWithKubectl(options: {
  kubectlPath: string;
  transport?: "kubectl" | "api";
  env: Readonly<Record<string, string | undefined>>;
  kubeconfig?: string;
  steps: string;
  runId: string;
  timings?: Partial<ExecutorTimings>;
  overrides?: Partial<ReturnType<typeof exampleSettings>> & { readonly stepTimeoutMs?: number };
  signal?: AbortSignal;
  /** Told of each event as it happens (the run's state can be looked at mid-run). */
  onEvent?: (event: RunEvent) => void;
  /** The backend of `overrides.caches`. */
  cacheDriver?: RunWorkflowOptions["cacheDriver"];
  /** Files written into the checkout before the run (relative path to content). */
  checkoutFiles?: Readonly<Record<string, string>>;
}): Promise<LibraryRun> {
  const ws = makeWorkspace(options.steps);
  for (const [path, content] of Object.entries(options.checkoutFiles ?? {}))
    writeFileSync(join(ws.checkout, path), content);
  const lines = options.steps.trim().split("\n");
  const base = exampleSettings({ steps: [] });
  const settings = {
    ...base,
    runId: options.runId,
    jobName: `knotless-run-${options.runId}`,
    runIdLabel: options.runId,
    target: { namespace: "default", ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}) },
    steps: lines.map((line, index) => {
      const [name, script] = line.split("\t") as [string, string];
      return { name, script, source: `steps:${index + 1}` };
    }),
    checkoutDir: ws.checkout,
    sharedStepsDir: ws.sharedSteps,
    outDir: ws.out,
    hostTar: HOST_TAR, // as the CLI does; `overrides: { hostTar: undefined }` runs the runner's own packer
    ...options.overrides,
  };
  const events: RunEvent[] = [];
  const env = { ...process.env, ...options.env };
  const cluster: Cluster & { close?: () => Promise<void> } =
    options.transport === "api"
      ? await openApiCluster(
          { files: options.kubeconfig ? [options.kubeconfig] : [], explicit: options.kubeconfig !== undefined },
          { env },
        )
      : new KubectlCluster(new Kubectl({ binary: options.kubectlPath, env }), settings.target);
  const result = await runWorkflow({
    settings,
    cluster,
    signal: options.signal ?? new AbortController().signal,
    sinks: [(e) => events.push(e), ...(options.onEvent ? [options.onEvent] : [])],
    timings: { ...FAST_TIMINGS, ...options.timings },
    ...(options.cacheDriver ? { cacheDriver: options.cacheDriver } : {}),
  }).finally(() => cluster.close?.());
  const output = (index: number, stream: "stdout" | "stderr" = "stdout"): string =>
    events
      .filter(
        (e): e is Extract<RunEvent, { kind: "step-output" }> =>
          e.kind === "step-output" && e.index === index && e.stream === stream,
      )
      .map((e) => e.text)
      .join("");
  return { result, events, out: ws.out, output };
}
