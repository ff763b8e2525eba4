// Label and field selector parsing and matching, as the API server applies them to lists and watches.

import { badRequest } from "./api-error.js";
import type { KubeObject } from "./types.js";

export type LabelRequirement =
  | { op: "=" | "!="; key: string; value: string }
  | { op: "in" | "notin"; key: string; values: string[] }
  | { op: "exists" | "!exists"; key: string };

export interface FieldRequirement {
  op: "=" | "!=";
  path: string;
  value: string;
}

/** Splits on commas that are not inside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

export function parseLabelSelector(text: string | null | undefined): LabelRequirement[] {
  if (!text) return [];
  return splitTopLevel(text).map((part) => {
    const set = /^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
    if (set) {
      const values = set[3]!
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v.length > 0);
      return { op: set[2] as "in" | "notin", key: set[1]!, values };
    }
    const neq = /^([^\s!=]+)\s*!=\s*(\S*)$/.exec(part);
    if (neq) return { op: "!=", key: neq[1]!, value: neq[2]! };
    const eq = /^([^\s!=]+)\s*==?\s*(\S*)$/.exec(part);
    if (eq) return { op: "=", key: eq[1]!, value: eq[2]! };
    const notExists = /^!\s*([^\s!=]+)$/.exec(part);
    if (notExists) return { op: "!exists", key: notExists[1]! };
    if (/^[^\s!=()]+$/.test(part)) return { op: "exists", key: part };
    throw badRequest(`unable to parse requirement: invalid label selector "${text}"`);
  });
}

export function matchesLabels(
  requirements: readonly LabelRequirement[],
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  return requirements.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case "=":
        return has && v === r.value;
      case "!=":
        return !has || v !== r.value;
      case "in":
        return has && r.values.includes(v!);
      case "notin":
        return !has || !r.values.includes(v!);
      case "exists":
        return has;
      case "!exists":
        return !has;
    }
  });
}

export function parseFieldSelector(text: string | null | undefined): FieldRequirement[] {
  if (!text) return [];
  return splitTopLevel(text).map((part) => {
    const m = /^([^=!]+?)\s*(!=|==|=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid field selector: "${text}"`);
    return { op: m[2] === "!=" ? "!=" : "=", path: m[1]!.trim(), value: m[3]!.trim() };
  });
}

/** Reads a dotted path (`involvedObject.name`, `status.phase`) from an object as a string ("" when absent). */
export function readFieldPath(obj: KubeObject, path: string): string {
  let cur: unknown = obj;
  for (const segment of path.split(".")) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[segment];
  }
  if (cur === undefined || cur === null) return "";
  return String(cur);
}

export function matchesFields(requirements: readonly FieldRequirement[], obj: KubeObject): boolean {
  return requirements.every((r) => {
    const v = readFieldPath(obj, r.path);
    return r.op === "=" ? v === r.value : v !== r.value;
  });
}

/** A parsed label and field selector pair, applied together. */
export interface ObjectFilter {
  labels: LabelRequirement[];
  fields: FieldRequirement[];
}

export function buildObjectFilter(
  labelSelector: string | null | undefined,
  fieldSelector: string | null | undefined,
): ObjectFilter {
  return { labels: parseLabelSelector(labelSelector), fields: parseFieldSelector(fieldSelector) };
}

export function matchesFilter(filter: ObjectFilter, obj: KubeObject): boolean {
  return matchesLabels(filter.labels, obj.metadata.labels) && matchesFields(filter.fields, obj);
}
