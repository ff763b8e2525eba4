// What a request asks to do, derived from its route, method and query the way kube-apiserver's RequestInfo does.

import type { RequestAttributes } from "./rbac.js";
import type { Route } from "./routes.js";

/** The verb of a resource request: get/list/watch for reads, create, update, patch, delete/deletecollection. */
export function findResourceVerb(method: string, hasName: boolean, query: URLSearchParams): string {
  switch (method.toUpperCase()) {
    case "GET":
    case "HEAD": {
      const watch = query.get("watch");
      if (watch === "true" || watch === "1") return "watch";
      return hasName ? "get" : "list";
    }
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return hasName ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}

/**
 * The attributes of one request. A path that names no served resource is a non-resource request of its path (so
 * an unknown path is refused before it is found missing, as on a real server). A namespace's own name is its
 * namespace, as kube-apiserver has it.
 */
export function describeRequest(route: Route, method: string, url: URL): RequestAttributes {
  if (route.kind !== "resource") return { kind: "nonResource", verb: method.toLowerCase(), path: url.pathname };
  const { type } = route;
  const namespace = type.resource === "namespaces" && route.name ? route.name : route.namespace;
  return {
    kind: "resource",
    verb: findResourceVerb(method, route.name !== undefined, url.searchParams),
    apiGroup: type.group,
    apiVersion: type.version,
    resource: type.resource,
    ...(route.subresource ? { subresource: route.subresource } : {}),
    ...(route.name ? { name: route.name } : {}),
    ...(namespace ? { namespace } : {}),
  };
}

/**
 * The checks an exec upgrade must pass. SPDY comes as a POST, which is create. A WebSocket upgrade is a GET, so
 * get; and, as kube-apiserver 1.35 does (AuthorizePodWebsocketUpgradeCreatePermission), create too.
 */
export function describeExecUpgrade(exec: RequestAttributes, method: string): RequestAttributes[] {
  if (method.toUpperCase() === "POST") return [{ ...exec, verb: "create" }];
  return [
    { ...exec, verb: "get" },
    { ...exec, verb: "create" },
  ];
}
