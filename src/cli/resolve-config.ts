// Turns raw command-line options into the run's typed configuration, refusing bad input before any cluster call.
import { randomBytes } from "node:crypto";
import { accessSync, constants, readFileSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { readDuration } from "../config/duration.js";
import { IMAGE, QUANTITY, readSize } from "../config/patterns.js";
import { InputError } from "../errors.js";
import type { HostTarSetting } from "../transfer/host-tar.js";
import type { ExecutorSettings } from "../executor/context.js";
import { parseStepsFile } from "../input/steps-file.js";
import { buildJobName, buildRunIdLabel, isAcceptableRunId } from "../k8s/names.js";
import { checkKubeconfigReadable, resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import { listKubeconfigFiles, readContextNamespace } from "./kubeconfig-namespace.js";
import { readKeepWarm } from "./warm-options.js";

/** Options exactly as the CLI parser hands them over (strings, unvalidated). */
export interface RawRunOptions extends RawClusterOptions {
  checkout?: string;
  steps?: string;
  out?: string;
  sharedSteps?: string;
  image: string;
  runId?: string;
  timeout: string;
  stepTimeout?: string;
  podTimeout: string;
  cpu: string;
  memory: string;
  maxOutputBytes: string;
  keep?: boolean;
  keepWarm?: string;
  maxWarm?: string;
  dryRun?: boolean;
  verbose?: boolean;
}

export interface RunConfig {
  readonly settings: ExecutorSettings & { readonly stepTimeoutMs?: number };
  readonly kubectlPath: string;
  readonly dryRun: boolean;
  readonly verbose: boolean;
}

function requireOption(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new InputError(`missing required option ${flag}`);
  return value;
}

function requireDirectory(path: string, flag: string): string {
  const absolute = resolve(path);
  let isDirectory = false;
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
    if (!statSync(absolute).isDirectory()) throw new InputError(`--out: expected a directory, found a file at ${absolute}`);
    entries = readdirSync(`${absolute}/outputs`);
  } catch (error) {
    if (error instanceof InputError) throw error;
  }
  if (entries.length > 0) throw new InputError(`--out: ${absolute}/outputs already has files from an earlier run; choose a fresh --out directory`);
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
export async function resolveRunConfig(raw: RawRunOptions, env: NodeJS.ProcessEnv): Promise<RunConfig> {
  const checkoutDir = requireDirectory(requireOption(raw.checkout, "--checkout"), "--checkout");
  const stepsFile = resolve(requireOption(raw.steps, "--steps"));
  const outDir = checkOutDir(requireOption(raw.out, "--out"));
  let stepsText: string;
  try {
    stepsText = readFileSync(stepsFile, "utf8");
  } catch (error) {
    throw new InputError(`cannot read the steps file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, stepsFile);
  }
  const steps = parseStepsFile(stepsText, stepsFile);
  const sharedStepsDir = raw.sharedSteps ? requireDirectory(raw.sharedSteps, "--shared-steps") : undefined;
  const runId = raw.runId ?? generateRunId();
  if (!isAcceptableRunId(runId)) throw new InputError(`--run-id expects 1 to 128 printable characters without spaces, got ${JSON.stringify(runId)}`);
  if (!IMAGE.test(raw.image)) throw new InputError(`--image expects an image reference such as busybox:1.36, got ${JSON.stringify(raw.image)}`);
  for (const [flag, value] of [["--cpu", raw.cpu], ["--memory", raw.memory]] as const) {
    if (!QUANTITY.test(value)) throw new InputError(`${flag} expects a Kubernetes quantity such as 500m, 1 or 512Mi, got "${value}"`);
  }
  // Without --namespace the Job goes to the kubeconfig context's namespace. A run leaves that to kubectl (create
  // reports it, later calls pin it; kubectl refuses a malformed kubeconfig or unknown context, an InputError too), so
  // it never loads a YAML parser; a dry run, which spawns nothing, reads the kubeconfig itself to print the calls.
  checkKubeconfigReadable(raw);
  const cluster = resolveClusterOptions(raw, env, raw.namespace ?? (raw.dryRun ? await readNamespaceForDryRun(raw, env) : undefined));
  const timeoutMs = readDuration(raw.timeout, "--timeout");
  const stepTimeoutMs = raw.stepTimeout === undefined ? undefined : readDuration(raw.stepTimeout, "--step-timeout");
  return {
    settings: {
      runId,
      jobName: buildJobName(runId),
      runIdLabel: buildRunIdLabel(runId),
      target: cluster.target,
      image: raw.image,
      cpu: raw.cpu,
      memory: raw.memory,
      steps,
      env: [
        { name: "CI", value: "true" },
        { name: "KNOTLESS_RUN_ID", value: runId },
      ],
      checkoutDir,
      ...(sharedStepsDir ? { sharedStepsDir } : {}),
      outDir,
      timeoutMs,
      ...(stepTimeoutMs !== undefined ? { stepTimeoutMs } : {}),
      podTimeoutMs: readDuration(raw.podTimeout, "--pod-timeout"),
      maxOutputBytes: readSize(raw.maxOutputBytes, "--max-output-bytes"),
      keep: raw.keep ?? false,
      ...readKeepWarm(raw.keepWarm, raw.maxWarm),
      ...resolveHostTar(env),
    },
    kubectlPath: cluster.kubectlPath,
    dryRun: raw.dryRun ?? false,
    verbose: raw.verbose ?? false,
  };
}
