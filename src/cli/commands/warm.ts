// `warm`: tops the namespace up to N warm placeholders ahead of a burst of runs, or (--release) deletes them now.
import { resolve } from "node:path";
import { IMAGE, QUANTITY } from "../../core/patterns.js";
import { CancelledError, describeError, InputError } from "../../core/errors.js";
import type { ClusterTarget } from "../../cluster/cluster.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import {
  CLUSTER_OPTIONS,
  resolveClusterOptions,
  type RawClusterOptions,
  type TransportName,
} from "../cluster-options.js";
import { EXIT, exitCodeForError } from "../exit-codes.js";
import type { OptionSpec } from "../option-spec.js";
import { readWarmCount, readWarmSeconds } from "../warm-options.js";
import { applyPodFlags, POD_OPTIONS, type RawPodOptions } from "../pod-options.js";
import { DEFAULT_RUNNER_CONFIG, type RunnerConfigSource } from "../../config/runner-config.js";
import { topUpPlaceholders, type WarmSpec } from "../../warm/top-up.js";
import { releasePlaceholders } from "../../warm/release.js";
import { readRunnerConfig } from "../../config/read-runner-config.js";
import { buildPlaceholderManifest } from "../../manifests/placeholder-manifest.js";
import { PLANNED_PLACEHOLDER, planReleaseCalls, planWarmCalls } from "../../dry-run/call-plan.js";
import { formatPlannedCalls } from "../dry-run.js";
import { openCluster } from "../../cluster/transports/open-cluster.js";

export const WARM_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--for <duration>",
    description: "how long each new placeholder keeps its node (billed while it waits), e.g. 10m",
    defaultValue: "10m",
  },
  {
    flag: "--count <n>",
    description: "placeholders of this size to have (tops up to this many, never more)",
    defaultValue: "1",
  },
  {
    flag: "--cpu <quantity>",
    description: "CPU request of each placeholder: a run requesting no more can claim it",
    defaultValue: "500m",
  },
  { flag: "--memory <quantity>", description: "memory request of each placeholder", defaultValue: "512Mi" },
  {
    flag: "--image <ref>",
    description: "what the placeholder waits in (needs sh and sleep); the runs' image gets it onto the node early",
    defaultValue: "busybox:1.36",
  },
  { flag: "--max-warm <n>", description: "most placeholders in the namespace, of any size", defaultValue: "1" },
  { flag: "--release", description: "delete every warm placeholder in the namespace now, instead" },
  { flag: "--dry-run", description: "print the placeholder manifest and every kubectl call; touch nothing" },
  {
    flag: "--config <file>",
    description:
      "the runner configuration (YAML): its pod keys (placement, pull secrets, labels, annotations, security profile) go on the placeholders, as on the runs' pods",
  },
  ...POD_OPTIONS.filter((option) => !option.flag.startsWith("--ephemeral-storage ")),
  ...CLUSTER_OPTIONS,
];

export interface RawWarmOptions extends RawClusterOptions, RawPodOptions {
  for: string;
  count: string;
  cpu: string;
  memory: string;
  image: string;
  maxWarm: string;
  release?: boolean;
  dryRun?: boolean;
  config?: string;
}

export interface WarmCommand {
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
  readonly transport: TransportName;
  readonly spec: WarmSpec;
  readonly release: boolean;
  readonly dryRun: boolean;
}

/**
 * Validates the options; throws InputError. Touches no cluster. `runner` is --config as read (readRunnerConfig);
 * its pod keys with the pod flags over them go on the placeholders as `run --keep-warm` puts the run's
 * (settings.pod: podSpecPatch is the run pod's alone, ephemeral storage the run container's).
 */
export function resolveWarmCommand(
  raw: RawWarmOptions,
  env: NodeJS.ProcessEnv,
  runner: RunnerConfigSource = { config: DEFAULT_RUNNER_CONFIG },
): WarmCommand {
  for (const [flag, value] of [
    ["--cpu", raw.cpu],
    ["--memory", raw.memory],
  ] as const) {
    if (!QUANTITY.test(value))
      throw new InputError(`${flag} expects a Kubernetes quantity such as 500m, 1 or 512Mi, got "${value}"`);
  }
  if (!IMAGE.test(raw.image))
    throw new InputError(`--image expects an image reference such as busybox:1.36, got ${JSON.stringify(raw.image)}`);
  const count = readWarmCount(raw.count, "--count");
  const maxWarm = readWarmCount(raw.maxWarm, "--max-warm");
  if (count > maxWarm && !raw.release)
    throw new InputError(
      `--count ${count} is more than --max-warm ${maxWarm} allows; raise --max-warm (each placeholder is a node billed while it waits)`,
    );
  const { ephemeralStorage: _storage, podSpecPatch: _patch, ...pod } = applyPodFlags(runner, raw).config.pod;
  const cluster = resolveClusterOptions(raw, env);
  return {
    target: cluster.target,
    kubectlPath: cluster.kubectlPath,
    transport: cluster.transport,
    spec: {
      count,
      maxWarm,
      seconds: readWarmSeconds(raw.for, "--for"),
      cpu: raw.cpu,
      memory: raw.memory,
      image: raw.image,
      ...(Object.keys(pod).length > 0 ? { pod } : {}),
    },
    release: raw.release ?? false,
    dryRun: raw.dryRun ?? false,
  };
}

export const warmCommand: CommandSpec<RawWarmOptions> = {
  name: "warm",
  summary:
    "keep N nodes warm with placeholder Jobs that runs claim (--release deletes them); each is billed while it waits",
  options: WARM_OPTIONS,
  execute: ({ options, ...io }) => executeWarm(options, io),
};

/** Prints what it did (or would do) on stdout and returns the exit code; `env` is read here and nowhere below. */
export async function executeWarm(options: RawWarmOptions, { env, stdout, stderr }: CommandIo): Promise<number> {
  let config: WarmCommand;
  try {
    config = resolveWarmCommand(
      options,
      env,
      await readRunnerConfig(options.config === undefined ? undefined : resolve(options.config)),
    );
  } catch (error) {
    stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
  if (config.dryRun) {
    stdout.write(await renderWarmDryRun(config));
    return EXIT.success;
  }
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => controller.abort(new CancelledError(`cancelled by ${signal}`));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const { cluster } = await openCluster(config, env);
    const deps = { cluster, target: config.target, signal: controller.signal };
    const report = config.release ? await releasePlaceholders(deps) : await topUpPlaceholders(deps, config.spec);
    stdout.write(`warm: ${report.detail}\n`);
    return EXIT.success;
  } catch (error) {
    stderr.write(`knotless-runner-k8s: warm: ${describeError(error)}\n`);
    return exitCodeForError(error);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The placeholder manifest and the calls, as `warm --dry-run` prints them. */
async function renderWarmDryRun(config: WarmCommand): Promise<string> {
  // The YAML printer loads only for a dry run: ~80 ms of CPU every other command would pay (docs/architecture.md).
  const { stringify } = await import("yaml");
  const lines: string[] = [];
  if (!config.release) {
    const { target, spec } = config;
    const manifest = buildPlaceholderManifest({
      name: PLANNED_PLACEHOLDER,
      ...(target.namespace === undefined ? {} : { namespace: target.namespace }),
      ...spec,
    });
    lines.push("# Warm placeholder manifest", "---", stringify(manifest).trimEnd(), "---");
  }
  lines.push(
    ...formatPlannedCalls(
      config.kubectlPath,
      config.target,
      config.release ? planReleaseCalls() : planWarmCalls(config.spec),
      config.transport,
    ),
  );
  return `${lines.join("\n")}\n`;
}
