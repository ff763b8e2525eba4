// The pod-key flags (--node-selector, --toleration, --pod-label, ...): declared once for run, serve and warm, checked, and laid over the --config file's `pod`.
import { QUANTITY } from "../core/patterns.js";
import { describeRunnerKey, LABEL_VALUE, OBJECT_NAME, QUALIFIED_NAME } from "../config/read-pod-config.js";
import { type PodConfig, type RunnerConfig } from "../config/runner-config.js";
import { POD_SPEC_CONFIG_KEYS, type PodSecurityProfile, type PodToleration } from "../manifests/pod-spec-config.js";
import { InputError } from "../core/errors.js";
import { parseQuantity } from "../core/quantity.js";
import type { OptionSpec } from "./option-spec.js";

export const POD_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--node-selector <key=value>",
    description: "a node label the run's pod must match, over --config's pod.nodeSelector (repeatable)",
    repeatable: true,
  },
  {
    flag: "--toleration <taint>",
    description:
      "a taint the pod tolerates, KEY[=VALUE]:EFFECT (Equal with a value, Exists without; EFFECT NoSchedule, PreferNoSchedule or NoExecute), added to --config's (repeatable)",
    repeatable: true,
  },
  { flag: "--priority-class <name>", description: "the pod's priorityClassName, over --config's" },
  { flag: "--runtime-class <name>", description: "the pod's runtimeClassName (kata, gvisor), over --config's" },
  {
    flag: "--image-pull-secret <name>",
    description:
      "a Secret in the namespace the kubelet pulls with (the runner never reads it), added to --config's (repeatable)",
    repeatable: true,
  },
  {
    flag: "--pod-label <key=value>",
    description: "a label on the Job and its pod, over --config's pod.labels (repeatable)",
    repeatable: true,
  },
  {
    flag: "--pod-annotation <key=value>",
    description: "an annotation on the Job and its pod, over --config's pod.annotations (repeatable)",
    repeatable: true,
  },
  {
    flag: "--security-profile <profile>",
    description:
      'default (root with few capabilities) or restricted (Pod Security Standard "restricted"), over --config\'s pod.security',
  },
  {
    flag: "--ephemeral-storage <quantities>",
    description:
      "the run container's ephemeral-storage REQUEST[:LIMIT], e.g. 2Gi:10Gi or :10Gi, over --config's (both together)",
  },
];

/** The pod flags as the CLI parser hands them over. */
export interface RawPodOptions {
  nodeSelector?: string[];
  toleration?: string[];
  priorityClass?: string;
  runtimeClass?: string;
  imagePullSecret?: string[];
  podLabel?: string[];
  podAnnotation?: string[];
  securityProfile?: string;
  ephemeralStorage?: string;
}

const POD_FLAG_KEYS = [
  "nodeSelector",
  "toleration",
  "priorityClass",
  "runtimeClass",
  "imagePullSecret",
  "podLabel",
  "podAnnotation",
  "securityProfile",
  "ephemeralStorage",
] as const;

/** The first pod flag given, as written (`--node-selector`), for "goes with" messages; undefined when none is. */
export function findPodFlag(raw: RawPodOptions): string | undefined {
  const key = POD_FLAG_KEYS.find((name) => raw[name] !== undefined);
  return key === undefined ? undefined : `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}

const KEY_RULE =
  "a key such as example.com/team or team (a name of at most 63 letters, digits, '-', '_' and '.', with an optional DNS prefix and '/')";
const VALUE_RULE = "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit";

/** `KEY=VALUE` flags as a map; a key given twice keeps the last (as on a command line one expects). */
function readPairs(
  values: readonly string[],
  flag: string,
  kind: "selector" | "label" | "annotation",
): Record<string, string> {
  const map: Record<string, string> = {};
  for (const text of values) {
    const eq = text.indexOf("=");
    if (eq < 0) throw new InputError(`${flag} expects KEY=VALUE, got ${JSON.stringify(text)}`);
    const [key, value] = [text.slice(0, eq), text.slice(eq + 1)];
    if (!QUALIFIED_NAME.test(key))
      throw new InputError(`${flag} expects ${KEY_RULE} before '=', got ${JSON.stringify(key)}`);
    const own = kind === "selector" ? undefined : describeRunnerKey(key, kind);
    if (own !== undefined) throw new InputError(`${flag}: ${own}`);
    if (kind !== "annotation" && !LABEL_VALUE.test(value))
      throw new InputError(`${flag} ${key}=: expects a label value of ${VALUE_RULE}, got ${JSON.stringify(value)}`);
    if (kind === "annotation" && /[\x00-\x08\x0b-\x1f\x7f]/.test(value))
      throw new InputError(`${flag} ${key}=: expects a value without control characters`);
    map[key] = value;
  }
  return map;
}

/** `KEY[=VALUE]:EFFECT`: Equal with a value, Exists without, as `kubectl taint` writes a taint. */
function readToleration(text: string): PodToleration {
  const match = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(text);
  if (!match)
    throw new InputError(
      `--toleration expects KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute (e.g. dedicated=ci:NoSchedule), got ${JSON.stringify(text)}`,
    );
  const [, key, value, effect] = match as unknown as [string, string, string | undefined, PodToleration["effect"]];
  if (!QUALIFIED_NAME.test(key))
    throw new InputError(`--toleration expects ${KEY_RULE} as its key, got ${JSON.stringify(key)}`);
  if (value !== undefined && !LABEL_VALUE.test(value))
    throw new InputError(`--toleration ${key}=: expects a value of ${VALUE_RULE}, got ${JSON.stringify(value)}`);
  return value === undefined ? { key, operator: "Exists", effect } : { key, operator: "Equal", value, effect };
}

function readObjectName(text: string, flag: string, example: string): string {
  if (!OBJECT_NAME.test(text))
    throw new InputError(
      `${flag} expects a Kubernetes object name such as ${example} (lower-case letters, digits, '-' and '.'), got ${JSON.stringify(text)}`,
    );
  return text;
}

/** `REQUEST[:LIMIT]` (`2Gi`, `2Gi:10Gi`, `:10Gi`), the request at most the limit. */
function readEphemeralStorage(text: string): NonNullable<PodConfig["ephemeralStorage"]> {
  const [request, limit, extra] = text.split(":");
  const bad =
    extra !== undefined ||
    (request === "" && (limit === undefined || limit === "")) ||
    [request, limit].some((part) => part !== undefined && part !== "" && !QUANTITY.test(part));
  if (bad)
    throw new InputError(
      `--ephemeral-storage expects REQUEST[:LIMIT] as Kubernetes quantities, e.g. 2Gi, 2Gi:10Gi or :10Gi, got ${JSON.stringify(text)}`,
    );
  if (request && limit && parseQuantity(request)! > parseQuantity(limit)!)
    throw new InputError(
      `--ephemeral-storage: the request ${request} is more than the limit ${limit}; a request is at most its limit`,
    );
  return { ...(request ? { request } : {}), ...(limit ? { limit } : {}) };
}

/** Checks the pod flags; only the keys given. Throws InputError naming the flag. */
export function readPodFlags(raw: RawPodOptions): PodConfig {
  const security = raw.securityProfile;
  if (security !== undefined && security !== "default" && security !== "restricted")
    throw new InputError(`--security-profile expects default or restricted, got ${JSON.stringify(security)}`);
  return {
    ...(raw.nodeSelector !== undefined
      ? { nodeSelector: readPairs(raw.nodeSelector, "--node-selector", "selector") }
      : {}),
    ...(raw.toleration !== undefined ? { tolerations: raw.toleration.map(readToleration) } : {}),
    ...(raw.priorityClass !== undefined
      ? { priorityClassName: readObjectName(raw.priorityClass, "--priority-class", "ci-low") }
      : {}),
    ...(raw.runtimeClass !== undefined
      ? { runtimeClassName: readObjectName(raw.runtimeClass, "--runtime-class", "gvisor") }
      : {}),
    ...(raw.podLabel !== undefined ? { labels: readPairs(raw.podLabel, "--pod-label", "label") } : {}),
    ...(raw.podAnnotation !== undefined
      ? { annotations: readPairs(raw.podAnnotation, "--pod-annotation", "annotation") }
      : {}),
    ...(raw.imagePullSecret !== undefined
      ? {
          imagePullSecrets: raw.imagePullSecret.map((name) =>
            readObjectName(name, "--image-pull-secret", "registry-credentials"),
          ),
        }
      : {}),
    ...(security !== undefined ? { security: security as PodSecurityProfile } : {}),
    ...(raw.ephemeralStorage !== undefined ? { ephemeralStorage: readEphemeralStorage(raw.ephemeralStorage) } : {}),
  };
}

/**
 * The flags over the file: a scalar flag replaces the file's value, and so does --ephemeral-storage (request and
 * limit together); map flags (node selector, labels, annotations) set their keys over the file's; list flags
 * (tolerations, pull secrets) are added after the file's, each once. Pure; keys in the order the file reader gives
 * them (ephemeralStorage, then POD_SPEC_CONFIG_KEYS), as the dry run and the manifest read them.
 */
export function layPodFlags(file: PodConfig, flags: PodConfig): PodConfig {
  const merged: Record<string, unknown> = {};
  for (const key of ["ephemeralStorage", ...POD_SPEC_CONFIG_KEYS] as const) {
    const [current, value] = [file[key], flags[key]];
    if (value === undefined) {
      if (current !== undefined) merged[key] = current;
    } else if (key === "nodeSelector" || key === "labels" || key === "annotations")
      merged[key] = { ...(current as object | undefined), ...(value as object) };
    else if (key === "imagePullSecrets")
      merged[key] = [...new Set([...((current as string[] | undefined) ?? []), ...(value as string[])])];
    else if (key === "tolerations") {
      const had = (current as PodToleration[] | undefined) ?? [];
      const seen = new Set(had.map((toleration) => JSON.stringify(toleration)));
      merged[key] = [
        ...had,
        ...(value as PodToleration[]).filter((toleration) => !seen.has(JSON.stringify(toleration))),
      ];
    } else merged[key] = value;
  }
  return merged as PodConfig;
}

/** The runner configuration with the pod flags laid over its `pod` and named in `podFlags` (unchanged when none is given). */
export function applyPodFlags<
  T extends { readonly config: RunnerConfig; readonly podFlags?: ReadonlyArray<keyof PodConfig> },
>(source: T, raw: RawPodOptions): T {
  const flags = readPodFlags(raw);
  const keys = Object.keys(flags) as Array<keyof PodConfig>;
  return keys.length === 0
    ? source
    : { ...source, config: { ...source.config, pod: layPodFlags(source.config.pod, flags) }, podFlags: keys };
}
