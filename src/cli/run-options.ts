// The `run` command's options, declared once: commander builds help and errors from them, and a plain command line is read without loading commander.
import { parseArgs } from "node:util";
import type { RawRunOptions } from "./resolve-config.js";

export interface RunOptionSpec {
  /** As commander takes it: `--name <value>` for a string, `--name` for a flag. */
  readonly flag: string;
  readonly description: string;
  readonly required?: boolean;
  readonly defaultValue?: string;
}

export const RUN_OPTIONS: readonly RunOptionSpec[] = [
  { flag: "--checkout <dir>", description: "the checkout, streamed into /work", required: true },
  { flag: "--steps <file>", description: "steps file: one `name<TAB>script` per line; blank and # lines ignored", required: true },
  { flag: "--out <dir>", description: "where result.json, run.log, log.ndjson and outputs/ are written", required: true },
  { flag: "--shared-steps <dir>", description: "a directory streamed into /steps" },
  { flag: "--image <ref>", description: "the container image of the run", defaultValue: "busybox:1.36" },
  { flag: "--namespace <ns>", description: "namespace (default: the kubeconfig context's, else default)" },
  { flag: "--kubeconfig <file>", description: "kubeconfig file (default: kubectl's own rules)" },
  { flag: "--context <name>", description: "kubeconfig context" },
  { flag: "--kubectl <path>", description: "kubectl binary (default: $KNOTLESS_KUBECTL, else kubectl on PATH)" },
  { flag: "--run-id <id>", description: "the run's id; the Job is knotless-run-<id> (default: generated)" },
  { flag: "--timeout <duration>", description: "budget of the whole run, e.g. 90s, 10m, 1h", defaultValue: "1h" },
  { flag: "--step-timeout <duration>", description: "budget of each step (default: the rest of the run's)" },
  { flag: "--pod-timeout <duration>", description: "how long the pod may stay Pending", defaultValue: "15m" },
  { flag: "--cpu <quantity>", description: "CPU request of the pod", defaultValue: "500m" },
  { flag: "--memory <quantity>", description: "memory request and limit of the pod", defaultValue: "512Mi" },
  { flag: "--max-output-bytes <size>", description: "most bytes taken back from /outputs", defaultValue: "512Mi" },
  { flag: "--keep", description: "leave the Job in the cluster and print the command that deletes it" },
  { flag: "--dry-run", description: "validate, then print the Job manifest and every kubectl call; touch nothing" },
  { flag: "--verbose", description: "also print every kubectl call on the console" },
];

/** `--max-output-bytes <size>` → `max-output-bytes`. */
function readOptionName(spec: RunOptionSpec): string {
  return spec.flag.slice(2).split(" ")[0]!;
}

/** `max-output-bytes` → `maxOutputBytes`, the key commander gives the parsed value. */
function toCamelCase(name: string): string {
  return name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/**
 * Reads `run OPTIONS` when the command line is plain: known options only, `--name value` or `--name=value`, no
 * value that looks like an option, no `--`, every required option present. Returns undefined for anything else (help, errors,
 * unusual forms), which the CLI hands to commander as before; what this accepts, commander reads the same way.
 */
export function parseRunFast(argv: readonly string[]): RawRunOptions | undefined {
  if (argv[0] !== "run" || argv.includes("--")) return undefined;
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const spec of RUN_OPTIONS) options[readOptionName(spec)] = { type: spec.flag.includes(" <") ? "string" : "boolean" };
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv.slice(1), options, strict: true, allowPositionals: false }));
  } catch {
    return undefined;
  }
  const raw: Record<string, string | boolean> = {};
  for (const spec of RUN_OPTIONS) {
    const name = readOptionName(spec);
    const value = values[name] ?? spec.defaultValue;
    if (value === undefined) {
      if (spec.required) return undefined;
      continue;
    }
    raw[toCamelCase(name)] = value;
  }
  return raw as unknown as RawRunOptions;
}
