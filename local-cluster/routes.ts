// Pure parsing of request paths into what the server should answer.

import { findResourceType, type ResourceType } from "./resources.js";

export type Route =
  | { kind: "version" }
  | { kind: "health" }
  | { kind: "api" }
  | { kind: "apis" }
  | { kind: "group"; group: string }
  | { kind: "groupVersion"; group: string; version: string }
  | { kind: "openapiIndex" }
  | { kind: "openapiGroupVersion"; group: string; version: string }
  | { kind: "faults" }
  | { kind: "state" }
  | { kind: "resource"; type: ResourceType; namespace?: string; name?: string; subresource?: string }
  | { kind: "unknown" };

function parseResourcePath(group: string, version: string, rest: string[]): Route {
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const type = findResourceType(group, version, rest[2]!);
    if (type?.namespaced) {
      if (rest.length > 5) return { kind: "unknown" };
      return { kind: "resource", type, namespace: rest[1], name: rest[3], subresource: rest[4] };
    }
    if (group !== "" || rest.length > 3) return { kind: "unknown" };
  }
  const type = findResourceType(group, version, rest[0]!);
  if (!type || rest.length > 3) return { kind: "unknown" };
  if (type.namespaced && rest.length > 1) return { kind: "unknown" };
  return { kind: "resource", type, name: rest[1], subresource: rest[2] };
}

export function parseRoute(pathname: string): Route {
  const s = pathname
    .split("/")
    .filter((x) => x.length > 0)
    .map(decodeURIComponent);
  const [a, b, c, d] = s;
  if (s.length === 1 && a === "version") return { kind: "version" };
  if (s.length === 1 && (a === "healthz" || a === "readyz" || a === "livez")) return { kind: "health" };
  if (s.length === 1 && a === "_faults") return { kind: "faults" };
  if (s.length === 1 && a === "_state") return { kind: "state" };
  if (a === "openapi" && b === "v3") {
    if (s.length === 2) return { kind: "openapiIndex" };
    if (c === "api" && s.length === 4) return { kind: "openapiGroupVersion", group: "", version: d! };
    if (c === "apis" && s.length === 5) return { kind: "openapiGroupVersion", group: d!, version: s[4]! };
    return { kind: "unknown" };
  }
  if (a === "api") {
    if (s.length === 1) return { kind: "api" };
    if (s.length === 2) return { kind: "groupVersion", group: "", version: b! };
    return parseResourcePath("", b!, s.slice(2));
  }
  if (a === "apis") {
    if (s.length === 1) return { kind: "apis" };
    if (s.length === 2) return { kind: "group", group: b! };
    if (s.length === 3) return { kind: "groupVersion", group: b!, version: c! };
    return parseResourcePath(b!, c!, s.slice(3));
  }
  return { kind: "unknown" };
}
