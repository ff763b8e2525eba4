// Reads the runner configuration's `pod` keys: placement, labels, pull secrets, the security profile and podSpecPatch, each at its file:line:column.
import { CREATE_TOKEN_ANNOTATION, MANAGED_BY_LABEL, ROLE_LABEL, RUN_ID_LABEL } from "../manifests/labels.js";
import { findPatchConflicts, POD_SPEC_FIELDS } from "../manifests/patch-conflicts.js";
import {
  describeUnknownKey,
  field,
  readCount,
  readEntries,
  readList,
  readMap,
  readMatching,
  readText,
  type FieldReader,
} from "../workflow/field-readers.js";
import {
  describeNode,
  isMapNode,
  positionOf,
  reportError,
  resolveAlias,
  type ReadContext,
} from "../workflow/read-context.js";
import type { SourcePosition } from "../workflow/workflow-types.js";
import type { PodSecurityProfile, PodToleration } from "../manifests/pod-spec-config.js";

/** A Kubernetes object name (DNS-1123 subdomain): Secrets, PriorityClasses, RuntimeClasses. */
export const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
export const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A label value: empty, or at most 63 letters, digits, '-', '_' and '.' starting and ending alphanumeric. */
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** The runner's own prefix: its labels and annotations say which run a Job is, who owns it, when it beat. */
const RUNNER_PREFIX = "knotless.dev/";
const RUNNER_LABELS: ReadonlySet<string> = new Set([MANAGED_BY_LABEL, RUN_ID_LABEL, ROLE_LABEL]);
/** The runner sets it to false on every pod: the run's node must not be scaled away under it. */
const SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict";
const RUNNER_ANNOTATIONS: ReadonlySet<string> = new Set([CREATE_TOKEN_ANNOTATION, SAFE_TO_EVICT]);

/** Why `key` is the runner's own label or annotation, or undefined when it is the operator's to set. */
export function describeRunnerKey(key: string, kind: "label" | "annotation"): string | undefined {
  const own = kind === "label" ? RUNNER_LABELS : RUNNER_ANNOTATIONS;
  if (own.has(key) || key.startsWith(RUNNER_PREFIX))
    return `${key} is the runner's own ${kind} (it finds and tells its objects apart by it): choose another key`;
  return undefined;
}

/** A map of keys to text values, each key and value checked; `runnerKeys` refuses the runner's own. */
function readTextMap(
  what: string,
  readValue: FieldReader<string>,
  runnerKeys?: "label" | "annotation",
): FieldReader<Record<string, string>> {
  return (ctx, node, at, path) => {
    const values: Record<string, string> = {};
    let failed = false;
    const position = readEntries(ctx, node, at, path, what, ({ key, keyAt, keyPath, value, valueAt }) => {
      const problem = !QUALIFIED_NAME.test(key)
        ? `expected a key such as example.com/team or team (a name of at most 63 letters, digits, '-', '_' and '.', with an optional DNS prefix and '/'), found ${JSON.stringify(key)}`
        : runnerKeys === undefined
          ? undefined
          : describeRunnerKey(key, runnerKeys);
      if (problem !== undefined) {
        reportError(ctx, keyAt, keyPath, problem);
        failed = true;
        return;
      }
      const read = readValue(ctx, value, valueAt, keyPath);
      if (read === undefined) failed = true;
      else values[key] = read;
    });
    return position === undefined || failed ? undefined : values;
  };
}

const readLabelValue = readMatching(
  LABEL_VALUE,
  "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
);
const readObjectName = (example: string): FieldReader<string> =>
  readMatching(OBJECT_NAME, `a Kubernetes object name such as ${example}`);

const TOLERATION_KEYS = {
  key: field(readText),
  operator: field(readMatching(/^(Exists|Equal)$/, "Exists or Equal") as FieldReader<"Exists" | "Equal">),
  value: field(readText),
  effect: field(
    readMatching(
      /^(NoSchedule|PreferNoSchedule|NoExecute)$/,
      "NoSchedule, PreferNoSchedule or NoExecute",
    ) as FieldReader<"NoSchedule" | "PreferNoSchedule" | "NoExecute">,
  ),
  tolerationSeconds: field(readCount),
};

/** One toleration, with the API server's own rules: `Exists` takes no value, and no key means every taint (Exists only). */
const readToleration: FieldReader<PodToleration> = (ctx, node, at, path) => {
  const read = readMap(
    ctx,
    node,
    at,
    path,
    TOLERATION_KEYS,
    "a toleration such as {key: dedicated, operator: Equal, value: ci, effect: NoSchedule}",
  );
  if (read === undefined) return undefined;
  const { values } = read;
  if (values.operator === "Exists" && values.value !== undefined && values.value !== "") {
    reportError(
      ctx,
      read.valuesAt.value ?? read.position,
      `${path}.value`,
      "a toleration with operator Exists takes no value",
    );
    return undefined;
  }
  if (values.key === undefined && values.operator !== "Exists") {
    reportError(ctx, read.position, path, "a toleration without a key matches every taint and needs operator: Exists");
    return undefined;
  }
  if (values.tolerationSeconds !== undefined && values.effect !== "NoExecute") {
    reportError(
      ctx,
      read.valuesAt.tolerationSeconds ?? read.position,
      `${path}.tolerationSeconds`,
      "tolerationSeconds goes with effect: NoExecute",
    );
    return undefined;
  }
  return values as PodToleration;
};

/** The node at `segments` below `node` (keys and list indexes), or the deepest one found on the way. */
function findNode(ctx: ReadContext, node: unknown, segments: readonly string[]): unknown {
  let current = resolveAlias(ctx, node);
  for (const segment of segments) {
    const next = ctx.yaml.isMap(current)
      ? current.items.find(
          (pair) => String((resolveAlias(ctx, pair.key) as { value?: unknown } | null)?.value) === segment,
        )?.value
      : ctx.yaml.isSeq(current)
        ? current.items[Number(segment)]
        : undefined;
    if (next === undefined || next === null) return current;
    current = resolveAlias(ctx, next);
  }
  return current;
}

/** Where the key `key` of the map `node` stands (for a message about the key itself, not its value). */
function findKeyPosition(ctx: ReadContext, node: unknown, key: string): SourcePosition | undefined {
  const map = resolveAlias(ctx, node);
  if (!ctx.yaml.isMap(map)) return undefined;
  return positionOf(
    ctx,
    map.items.find((pair) => String((resolveAlias(ctx, pair.key) as { value?: unknown } | null)?.value) === key)?.key,
  );
}

/** A failed schema check as `@kubernetes-models/validate` throws it (ajv's errors). */
interface SchemaErrors {
  readonly errors?: ReadonlyArray<{
    readonly instancePath: string;
    readonly message?: string;
    readonly params?: { readonly allowedValues?: readonly unknown[]; readonly missingProperty?: string };
  }>;
}

/**
 * Checks `value` (read from `node`) with a kubernetes-models validator and reports each failing place at its own
 * file:line:column; whether it passed.
 */
function reportSchemaErrors(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  value: unknown,
  validate: (value: unknown) => void,
): boolean {
  try {
    validate(value);
    return true;
  } catch (error) {
    const byPlace = new Map<string, string[]>();
    for (const issue of (error as SchemaErrors).errors ?? []) {
      if (issue.message === undefined || /exactly one schema|must match "then"/.test(issue.message)) continue;
      const allowed = issue.params?.allowedValues ? `: ${issue.params.allowedValues.join(", ")}` : "";
      const words =
        issue.message.replace(/^must /, "").replace("be equal to one of the allowed values", "be one of") + allowed;
      byPlace.set(issue.instancePath, [...(byPlace.get(issue.instancePath) ?? []), words]);
    }
    if (byPlace.size === 0) byPlace.set("", [(error as Error).message]);
    for (const [place, words] of byPlace) {
      const segments = place.split("/").slice(1);
      const target = findNode(ctx, node, segments);
      const where = segments.map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`)).join("");
      reportError(
        ctx,
        positionOf(ctx, target) ?? at,
        `${path}${where}`,
        `expected it to ${[...new Set(words)].join(" or ")}`,
      );
    }
    return false;
  }
}

/** A YAML map as plain JSON (aliases resolved), or undefined after reporting a value that is not a map. */
function readPlainMap(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  what: string,
): Record<string, unknown> | undefined {
  const map = resolveAlias(ctx, node);
  if (!isMapNode(ctx, map)) {
    reportError(ctx, at, path, `expected ${what}, found ${describeNode(ctx, map)}`);
    return undefined;
  }
  return map.toJS(ctx.document) as Record<string, unknown>;
}

/** `affinity`: the pod spec's, checked against the Kubernetes schema. */
const readAffinity =
  (schemas: PodSchemas): FieldReader<Record<string, unknown>> =>
  (ctx, node, at, path) => {
    const value = readPlainMap(
      ctx,
      node,
      at,
      path,
      "an affinity such as {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ...}}",
    );
    if (value === undefined) return undefined;
    for (const key of Object.keys(value)) {
      if (!["nodeAffinity", "podAffinity", "podAntiAffinity"].includes(key)) {
        reportError(
          ctx,
          findKeyPosition(ctx, node, key) ?? at,
          `${path}.${key}`,
          describeUnknownKey(key, ["nodeAffinity", "podAffinity", "podAntiAffinity"]),
        );
        return undefined;
      }
    }
    return reportSchemaErrors(ctx, node, at, path, value, (v) => schemas.validateAffinity(v)) ? value : undefined;
  };

/** `podSpecPatch`: PodSpec keys only, nothing the runner relies on (findPatchConflicts), and schema-valid. */
const readPodSpecPatch =
  (schemas: PodSchemas): FieldReader<Record<string, unknown>> =>
  (ctx, node, at, path) => {
    const patch = readPlainMap(
      ctx,
      node,
      at,
      path,
      "a strategic-merge patch of the pod spec, such as {hostAliases: [{ip: 10.0.0.5, hostnames: [registry.local]}]}",
    );
    if (patch === undefined) return undefined;
    let failed = false;
    for (const key of Object.keys(patch)) {
      if (key !== "$patch" && !POD_SPEC_FIELDS.includes(key)) {
        reportError(
          ctx,
          findKeyPosition(ctx, node, key) ?? at,
          `${path}.${key}`,
          `not a key of the pod spec; ${describeUnknownKey(key, POD_SPEC_FIELDS)}`,
        );
        failed = true;
      }
    }
    for (const conflict of findPatchConflicts(patch)) {
      const segments = conflict.path.map(String);
      const where = conflict.path
        .map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${segment}`))
        .join("");
      reportError(ctx, positionOf(ctx, findNode(ctx, node, segments)) ?? at, `${path}${where}`, conflict.message);
      failed = true;
    }
    if (failed) return undefined;
    // The patch is checked as a pod spec of its own: a patch's container names only what it changes, which the schema allows.
    return reportSchemaErrors(ctx, node, at, path, { containers: [], ...patch }, (v) => schemas.validatePodSpec(v))
      ? patch
      : undefined;
  };

/** The pod keys besides `ephemeralStorage` (read-runner-config.ts reads that one with the rest of the file). */
export function buildPodSpecKeys(schemas: PodSchemas) {
  return {
    nodeSelector: field(readTextMap("a map of node labels such as {pool: ci}", readLabelValue)),
    tolerations: field<PodToleration[]>((ctx, node, at, path) =>
      readList(ctx, node, at, path, "a list of tolerations", readToleration),
    ),
    affinity: field(readAffinity(schemas)),
    priorityClassName: field(readObjectName("ci-low")),
    runtimeClassName: field(readObjectName("kata or gvisor")),
    labels: field(readTextMap("a map of labels such as {team: ci}", readLabelValue, "label")),
    annotations: field(
      readTextMap("a map of annotations such as {example.com/cost-center: ci}", readText, "annotation"),
    ),
    imagePullSecrets: field<string[]>((ctx, node, at, path) =>
      readList(
        ctx,
        node,
        at,
        path,
        "a list of Secret names such as [registry-credentials]",
        readObjectName("registry-credentials"),
      ),
    ),
    security: field(readMatching(/^(default|restricted)$/, "default or restricted") as FieldReader<PodSecurityProfile>),
    podSpecPatch: field(readPodSpecPatch(schemas)),
  };
}

/** The kubernetes-models validators the pod keys need, loaded only when a file sets `affinity` or `podSpecPatch`. */
export interface PodSchemas {
  readonly validateAffinity: (value: unknown) => void;
  readonly validatePodSpec: (value: unknown) => void;
}

/** Validators that are never called: for a file without `affinity` and `podSpecPatch`, which then need no schema loaded. */
export const UNUSED_POD_SCHEMAS: PodSchemas = {
  validateAffinity: () => {
    throw new Error("pod schemas were not loaded");
  },
  validatePodSpec: () => {
    throw new Error("pod schemas were not loaded");
  },
};

/** Loads PodSchemas (~200 ms of CPU for kubernetes-models' validators: never at import time, only for a file that needs them). */
export async function loadPodSchemas(): Promise<PodSchemas> {
  const [{ Affinity }, { PodSpec }] = await Promise.all([
    import("kubernetes-models/v1/Affinity"),
    import("kubernetes-models/v1/PodSpec"),
  ]);
  return {
    validateAffinity: (value) => new Affinity(value as never).validate(),
    validatePodSpec: (value) => new PodSpec(value as never).validate(),
  };
}
