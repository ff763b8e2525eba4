// Pure builders of the legacy discovery documents (/version, /api, /apis, /api/v1, /apis/G/V) kubectl reads first.

import { RESOURCE_TYPES, formatApiVersion, listGroupVersions } from "./resources.js";

export const SERVER_GIT_VERSION = "v1.30.0-knotless-local";

export function buildVersionInfo(): object {
  return {
    major: "1",
    minor: "30",
    gitVersion: SERVER_GIT_VERSION,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.22.0",
    compiler: "gc",
    platform: "linux/amd64",
  };
}

export function buildApiVersions(): object {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: "127.0.0.1" }],
  };
}

export function buildApiGroupList(): object {
  const groups = listGroupVersions()
    .filter((gv) => gv.group !== "")
    .map((gv) => {
      const groupVersion = formatApiVersion(gv.group, gv.version);
      return {
        name: gv.group,
        versions: [{ groupVersion, version: gv.version }],
        preferredVersion: { groupVersion, version: gv.version },
      };
    });
  return { kind: "APIGroupList", apiVersion: "v1", groups };
}

export function buildApiGroup(group: string): object | undefined {
  const gv = listGroupVersions().find((g) => g.group === group);
  if (!gv) return undefined;
  const groupVersion = formatApiVersion(gv.group, gv.version);
  return {
    kind: "APIGroup",
    apiVersion: "v1",
    name: group,
    versions: [{ groupVersion, version: gv.version }],
    preferredVersion: { groupVersion, version: gv.version },
  };
}

/** The APIResourceList of one group-version, or undefined when the cluster does not serve it. */
export function buildApiResourceList(group: string, version: string): object | undefined {
  const types = RESOURCE_TYPES.filter((t) => t.group === group && t.version === version);
  if (types.length === 0) return undefined;
  const resources: object[] = [];
  for (const t of types) {
    resources.push({
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: t.verbs,
      ...(t.shortNames ? { shortNames: t.shortNames } : {}),
      ...(t.categories ? { categories: t.categories } : {}),
      storageVersionHash: "",
    });
    for (const sub of t.subresources ?? []) {
      if (sub === "token") {
        resources.push({
          name: `${t.resource}/token`,
          singularName: "",
          namespaced: t.namespaced,
          group: "authentication.k8s.io",
          version: "v1",
          kind: "TokenRequest",
          verbs: ["create"],
        });
        continue;
      }
      const verbs = sub === "exec" ? ["create", "get"] : sub === "log" ? ["get"] : ["get", "patch", "update"];
      const kind = sub === "exec" ? "PodExecOptions" : t.kind;
      resources.push({ name: `${t.resource}/${sub}`, singularName: "", namespaced: t.namespaced, kind, verbs });
    }
  }
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: formatApiVersion(group, version), resources };
}
