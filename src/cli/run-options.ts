// The `run` command's options, declared once: commander builds help and errors from them, and a plain command line is read without loading commander.
import { parseArgs } from "node:util";
import { CLUSTER_OPTIONS } from "./cluster-options.js";
import { POD_OPTIONS } from "./pod-options.js";
import { readOptionName, takesValue, toCamelCase, type OptionSpec } from "./option-spec.js";
import type { RawRunOptions } from "./resolve-run-command.js";

export const RUN_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--checkout <dir>",
    description: "the checkout, streamed into /work (optional when the workflow says clone.skip)",
  },
  {
    flag: "--workflow <file>",
    description: "a workflow file (Tangled-style YAML): exactly one of --workflow and --steps",
  },
  { flag: "--steps <file>", description: "steps file: one `name<TAB>script` per line; blank and # lines ignored" },
  {
    flag: "--out <dir>",
    description: "where result.json, run.log, log.ndjson and outputs/ are written (required but with --resume)",
  },
  {
    flag: "--resume <dir>",
    description:
      "re-attach to the run a killed `run` left in this --out directory (its plan.json and checkpoint.json) and finish it, with this command's cluster flags",
  },
  { flag: "--shared-steps <dir>", description: "a directory streamed into /steps" },
  {
    flag: "--event <name>",
    description: "the trigger's event (push, pull_request, manual, ...): the workflow's `when` is evaluated",
  },
  { flag: "--ref <ref>", description: "the trigger's ref, e.g. refs/heads/main or refs/tags/v1.0" },
  { flag: "--branch <name>", description: "the trigger's branch (instead of --ref)" },
  { flag: "--tag <name>", description: "the trigger's tag (instead of --ref)" },
  { flag: "--sha <sha>", description: "the commit the run is for (KNOTLESS_SHA)" },
  { flag: "--repo <name>", description: "the repository the run is for (KNOTLESS_REPO)" },
  {
    flag: "--changed-file <path>",
    description: "a file the change touched, relative to the repository's root, for `when[].paths` (repeatable)",
    repeatable: true,
  },
  { flag: "--changed-files <file>", description: "a file listing the changed files, one per line, for `when[].paths`" },
  {
    flag: "--pr-action <action>",
    description:
      "a pull request's action for `when[].types`: opened, reopened, synchronize, closed or merged (default opened)",
  },
  {
    flag: "--pr-source-branch <name>",
    description: "a pull request's source branch (TANGLED_PR_SOURCE_BRANCH, TANGLED_REF)",
  },
  { flag: "--pr-source-sha <sha>", description: "a pull request's source head (TANGLED_PR_SOURCE_SHA; default --sha)" },
  { flag: "--knot <host>", description: "the repository's knot (TANGLED_REPO_KNOT)" },
  { flag: "--repo-did <did>", description: "the repository owner's DID (TANGLED_REPO_DID)" },
  { flag: "--repo-name <name>", description: "the repository's name (TANGLED_REPO_NAME)" },
  { flag: "--default-branch <name>", description: "the repository's default branch (TANGLED_REPO_DEFAULT_BRANCH)" },
  { flag: "--repo-url <url>", description: "the repository's URL (TANGLED_REPO_URL; default https://KNOT/DID/NAME)" },
  { flag: "--pipeline-id <uri>", description: "the pipeline's AT URI (TANGLED_PIPELINE_ID)" },
  {
    flag: "--checkout-git <url>",
    description:
      "instead of --checkout: the repository to clone at --checkout-sha, in the pod when the image has git, else on this host (depth and submodules as the workflow's clone says)",
  },
  { flag: "--checkout-sha <sha>", description: "the full commit id --checkout-git clones" },
  {
    flag: "--config <file>",
    description:
      "the runner configuration (YAML): limits, the pod's keys, microvm images, allowPrivileged, the Docker daemon's image",
  },
  ...POD_OPTIONS,
  {
    flag: "--secrets <file>",
    description: "a dotenv file of secrets (KEY=value); steps see them as variables; masked in all output",
  },
  {
    flag: "--secret-env <name>",
    description: "a secret taken from this process's environment variable NAME (repeatable)",
    repeatable: true,
  },
  {
    flag: "--nixery <url>",
    description: "the Nixery registry that composes the image of a nixery workflow, e.g. nixery.dev",
  },
  { flag: "--image <ref>", description: "the container image of the run (default: the workflow's, else busybox:1.36)" },
  ...CLUSTER_OPTIONS,
  { flag: "--run-id <id>", description: "the run's id; the Job is knotless-run-<id> (default: generated)" },
  {
    flag: "--timeout <duration>",
    description: "budget of the whole run, e.g. 90s, 10m, 1h (default: the workflow's, else 1h)",
  },
  {
    flag: "--step-timeout <duration>",
    description: "budget of each step, over the steps' own (default: the step's, else the rest of the run's)",
  },
  { flag: "--pod-timeout <duration>", description: "how long the pod may stay Pending (default 15m)" },
  {
    flag: "--pod-idle-timeout <duration>",
    description:
      "the pod stops itself after this long without a runner exec, e.g. once its runner died (default 10m, at least 15s)",
  },
  { flag: "--cpu <quantity>", description: "CPU request of the pod (default: the workflow's, else 500m)" },
  {
    flag: "--memory <quantity>",
    description: "memory request and limit of the pod (default: the workflow's, else 512Mi)",
  },
  { flag: "--max-output-bytes <size>", description: "most bytes taken back from /outputs (default 512Mi)" },
  {
    flag: "--max-log-bytes <size>",
    description: "most bytes of step output kept in run.log, log.ndjson and the console (default 64Mi)",
  },
  { flag: "--keep", description: "leave the Job in the cluster and print the command that deletes it" },
  {
    flag: "--keep-warm <duration>",
    description:
      "after the Job is deleted, leave a placeholder that keeps its node for this long (billed while it waits)",
  },
  {
    flag: "--max-warm <n>",
    description: "most warm placeholders in the namespace, for --keep-warm",
    defaultValue: "1",
  },
  {
    flag: "--skip-warm",
    description: "do not look for a warm placeholder to claim (one API call less, for clusters that never have one)",
  },
  {
    flag: "--cache-dir <dir>",
    description:
      "the host directory that keeps the workflow's caches (default $XDG_CACHE_HOME/knotless-runner-k8s, else ~/.cache/knotless-runner-k8s)",
  },
  {
    flag: "--cache-max-bytes <size>",
    description: "most bytes the cache store keeps; the least recently used entries go first (default 5Gi)",
  },
  {
    flag: "--cache-pvc <name>",
    description: "keep the caches on this PersistentVolumeClaim in the run's namespace instead of --cache-dir",
  },
  { flag: "--no-cache", description: "restore and save no cache (the workflow's caches are not even rendered)" },
  {
    flag: "--dry-run",
    description: "validate, then print the resolved workflow, the Job manifest and every kubectl call; touch nothing",
  },
  { flag: "--verbose", description: "also print every kubectl call on the console" },
];

/**
 * Reads `run OPTIONS` when the command line is plain: known options only, `--name value` or `--name=value`, no
 * value that looks like an option, no `--`, every required option present. Returns undefined for anything else (help, errors,
 * unusual forms), which the CLI hands to commander as before; what this accepts, commander reads the same way.
 */
export function parseRunFast(argv: readonly string[]): RawRunOptions | undefined {
  if (argv[0] !== "run" || argv.includes("--")) return undefined;
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {};
  for (const spec of RUN_OPTIONS)
    options[readOptionName(spec)] = {
      type: takesValue(spec) ? "string" : "boolean",
      ...(spec.repeatable ? { multiple: true } : {}),
    };
  let values: Record<string, string | boolean | Array<string | boolean> | undefined>;
  try {
    ({ values } = parseArgs({ args: argv.slice(1), options, strict: true, allowPositionals: false }));
  } catch {
    return undefined;
  }
  const raw: Record<string, string | boolean | Array<string | boolean>> = {};
  for (const spec of RUN_OPTIONS) {
    const name = readOptionName(spec);
    if (name.startsWith("no-")) {
      // As commander reads a negatable flag: `--no-cache` sets `cache` false, and `cache` is true without it.
      raw[toCamelCase(name.slice(3))] = values[name] !== true;
      continue;
    }
    const value = values[name] ?? spec.defaultValue;
    if (value === undefined) {
      if (spec.required) return undefined;
      continue;
    }
    raw[toCamelCase(name)] = value;
  }
  // --out is required unless --resume names the directory: a line with neither is commander's to refuse.
  if (raw.out === undefined && raw.resume === undefined) return undefined;
  return raw as unknown as RawRunOptions;
}
