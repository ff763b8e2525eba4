// Applies a strategic-merge patch to a pod spec, as the API server does for PodSpec's list keys: a pure function.

type Json = unknown;
type JsonObject = Record<string, Json>;

/** How one list field merges: by the key its items are matched on (Kubernetes' patchMergeKey), its items' own lists. */
interface ListRule {
  readonly mergeKey: string;
  readonly items?: ListRules;
}
type ListRules = Readonly<Record<string, ListRule>>;

/** A container's lists with `patchStrategy: merge` (k8s.io/api/core/v1 types.go); the others (command, args, envFrom) are replaced. */
const CONTAINER_LISTS: ListRules = {
  env: { mergeKey: "name" },
  volumeMounts: { mergeKey: "mountPath" },
  volumeDevices: { mergeKey: "devicePath" },
  ports: { mergeKey: "containerPort" },
};

/** PodSpec's lists with `patchStrategy: merge`; tolerations, readinessGates and the rest are replaced whole, as Kubernetes does. */
export const POD_SPEC_LISTS: ListRules = {
  containers: { mergeKey: "name", items: CONTAINER_LISTS },
  initContainers: { mergeKey: "name", items: CONTAINER_LISTS },
  ephemeralContainers: { mergeKey: "name", items: CONTAINER_LISTS },
  volumes: { mergeKey: "name" },
  imagePullSecrets: { mergeKey: "name" },
  hostAliases: { mergeKey: "ip" },
  topologySpreadConstraints: { mergeKey: "topologyKey" },
  resourceClaims: { mergeKey: "name" },
  schedulingGates: { mergeKey: "name" },
};

/** The directive key of a strategic-merge patch; only `$patch` (replace, merge, delete) is understood. */
export const PATCH_DIRECTIVE = "$patch";

function isObject(value: Json): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Merges `patch` into `target` (neither changed): null deletes a key, `$patch: replace` takes the patch as it is. */
function mergeObject(target: JsonObject, patch: JsonObject, lists: ListRules): JsonObject {
  if (patch[PATCH_DIRECTIVE] === "replace") return withoutDirective(patch);
  const merged: JsonObject = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key === PATCH_DIRECTIVE) continue;
    if (value === null) delete merged[key];
    else if (Array.isArray(value) && Object.hasOwn(lists, key))
      merged[key] = mergeList(Array.isArray(merged[key]) ? (merged[key] as Json[]) : [], value, lists[key]!);
    else if (isObject(value) && isObject(merged[key])) merged[key] = mergeObject(merged[key] as JsonObject, value, {});
    else merged[key] = isObject(value) ? withoutDirective(value) : value;
  }
  return merged;
}

function withoutDirective(value: JsonObject): JsonObject {
  const { [PATCH_DIRECTIVE]: _directive, ...rest } = value;
  return rest;
}

/**
 * Merges a list by its key: a patch item with the key of an existing item merges into it (or deletes it, with
 * `$patch: delete`); a new key is appended, in the patch's order; an item `{$patch: replace}` makes the list the
 * patch's other items.
 */
function mergeList(target: readonly Json[], patch: readonly Json[], rule: ListRule): Json[] {
  if (patch.some((item) => isObject(item) && item[PATCH_DIRECTIVE] === "replace" && Object.keys(item).length === 1)) {
    return patch
      .filter((item) => !(isObject(item) && item[PATCH_DIRECTIVE] === "replace"))
      .map((item) => (isObject(item) ? withoutDirective(item) : item));
  }
  const merged = [...target];
  for (const item of patch) {
    if (!isObject(item)) continue;
    const index = merged.findIndex((existing) => isObject(existing) && existing[rule.mergeKey] === item[rule.mergeKey]);
    if (item[PATCH_DIRECTIVE] === "delete") {
      if (index >= 0) merged.splice(index, 1);
    } else if (index >= 0) merged[index] = mergeObject(merged[index] as JsonObject, item, rule.items ?? {});
    else merged.push(mergeObject({}, item, rule.items ?? {}));
  }
  return merged;
}

/** The pod spec with `patch` applied by strategic merge (Kubernetes' rules for PodSpec's lists). Pure. */
export function applyPodSpecPatch<T extends object>(spec: T, patch: Readonly<Record<string, unknown>>): T {
  return mergeObject(spec as JsonObject, patch as JsonObject, POD_SPEC_LISTS) as T;
}
