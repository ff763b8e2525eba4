// Pure builders of a minimal OpenAPI v3 index and per-group-version documents: enough for kubectl to validate server-side.

import { RESOURCE_TYPES, formatApiVersion, listGroupVersions } from "./resources.js";

/** The URL path segment of a group-version: `api/v1` or `apis/batch/v1`. */
export function formatGroupVersionPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

export function buildOpenApiIndex(): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of listGroupVersions()) {
    const p = formatGroupVersionPath(gv.group, gv.version);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=LOCAL1` };
  }
  return { paths };
}

/**
 * The document of one group-version: each resource path carries a PATCH operation tagged with its
 * group-version-kind and a `fieldValidation` query parameter, which makes kubectl send fieldValidation=Strict
 * and leave validation to the server instead of needing full schemas.
 */
export function buildOpenApiGroupVersion(group: string, version: string): object | undefined {
  const types = RESOURCE_TYPES.filter((t) => t.group === group && t.version === version);
  if (types.length === 0) return undefined;
  const prefix = "/" + formatGroupVersionPath(group, version);
  const paths: Record<string, object> = {};
  const schemas: Record<string, object> = {};
  for (const t of types) {
    const gvk = { group, version, kind: t.kind };
    const path = t.namespaced
      ? `${prefix}/namespaces/{namespace}/${t.resource}/{name}`
      : `${prefix}/${t.resource}/{name}`;
    const parameters = [
      { name: "name", in: "path", required: true, schema: { type: "string", uniqueItems: true } },
      ...(t.namespaced
        ? [{ name: "namespace", in: "path", required: true, schema: { type: "string", uniqueItems: true } }]
        : []),
      { name: "dryRun", in: "query", schema: { type: "string", uniqueItems: true } },
      { name: "fieldManager", in: "query", schema: { type: "string", uniqueItems: true } },
      { name: "fieldValidation", in: "query", schema: { type: "string", uniqueItems: true } },
    ];
    paths[path] = {
      patch: {
        operationId: `patch${t.kind}`,
        parameters,
        responses: { "200": { description: "OK" } },
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
      },
    };
    const schemaName = `io.k8s.local.${group || "core"}.${version}.${t.kind}`;
    schemas[schemaName] = {
      type: "object",
      description: `${t.kind} (local-cluster stand-in schema: fields are not described)`,
      "x-kubernetes-group-version-kind": [gvk],
      properties: {
        apiVersion: { type: "string" },
        kind: { type: "string" },
        metadata: { type: "object" },
      },
    };
  }
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: formatApiVersion(group, version) },
    paths,
    components: { schemas },
  };
}
