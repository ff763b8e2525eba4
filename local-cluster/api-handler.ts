// The REST verbs on stored resources: get, list, watch, create, replace, patch, delete, plus reviews, tokens and pod logs.

import { checkPodSecurity } from "./pod-security.js";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccessControl } from "./access-control.js";
import { admitCreate } from "./admission.js";
import { ApiError, badRequest, internalError, notFound, forbiddenByAdmission } from "./api-error.js";
import type { Deleter, PropagationPolicy } from "./deletion.js";
import type { FaultInjector } from "./faults.js";
import { readJsonBody, sendJson } from "./http-util.js";
import type { Kubelet } from "./kubelet.js";
import { applyMergePatch } from "./merge-patch.js";
import { checkPreconditions } from "./preconditions.js";
import { evictPod } from "./eviction.js";
import type { PodmanClient } from "./podman.js";
import type { UserInfo } from "./rbac.js";
import { formatApiVersion, isReviewResource, storeKeyOf, type ResourceType } from "./resources.js";
import { answerReview } from "./reviews.js";
import { buildObjectFilter, matchesFilter } from "./selectors.js";
import type { ObjectStore } from "./store.js";
import { buildTable, wantsTable } from "./table.js";
import { issueServiceAccountToken } from "./token-request.js";
import type { KubeObject } from "./types.js";
import { serveWatch } from "./watch.js";

export interface ApiContext {
  store: ObjectStore;
  faults: FaultInjector;
  deleter: Deleter;
  kubelet: Kubelet;
  podman: PodmanClient | undefined;
  access: AccessControl;
  /** How often a watch that asked for bookmarks (allowWatchBookmarks) gets one, ms (default 60 s, as an API server). */
  watchBookmarkMs?: number;
}

export interface ResourceRequest {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function respondObject(
  req: IncomingMessage,
  res: ServerResponse,
  code: number,
  storeKey: string,
  obj: KubeObject,
  url: URL,
): void {
  if (wantsTable(req.headers.accept))
    sendJson(
      res,
      code,
      buildTable(storeKey, [obj], url.searchParams.get("includeObject"), obj.metadata.resourceVersion),
    );
  else sendJson(res, code, obj);
}

/** Makes sure a namespace object exists for every namespace used (all namespaces are implicitly usable). */
export function ensureNamespace(store: ObjectStore, name: string): void {
  if (store.get("namespaces", undefined, name)) return;
  try {
    store.create("namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name,
        uid: "",
        resourceVersion: "",
        creationTimestamp: "",
        labels: { "kubernetes.io/metadata.name": name },
      },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
  } catch {
    // created concurrently
  }
}

/** Serves one resource request of `user`, whom the server has already authorized for it. */
export async function handleResource(
  ctx: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  r: ResourceRequest,
  url: URL,
  user: UserInfo,
): Promise<void> {
  const storeKey = storeKeyOf(r.type);
  const method = req.method ?? "GET";
  const q = url.searchParams;

  if (r.subresource === "log" && r.type.resource === "pods" && method === "GET") return servePodLog(ctx, res, r, url);
  if (r.subresource === "exec" || r.subresource === "attach")
    throw badRequest(
      "exec needs a WebSocket upgrade (v5.channel.k8s.io or v4.channel.k8s.io); SPDY is not supported by the local cluster",
    );
  if (r.subresource === "token" && r.type.resource === "serviceaccounts" && r.namespace && r.name) {
    if (method !== "POST")
      throw new ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    return sendJson(
      res,
      201,
      issueServiceAccountToken(ctx.store, ctx.access.tokens, r.namespace, r.name, await readJsonBody(req)),
    );
  }
  if (r.subresource === "eviction" && r.type.resource === "pods" && r.namespace && r.name) {
    if (method !== "POST")
      throw new ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    return sendJson(res, 201, evictPod(ctx.store, ctx.deleter, r.namespace, r.name, await readJsonBody(req)));
  }
  if (r.subresource && r.subresource !== "status")
    throw notFound(`${r.type.resource}/${r.subresource}`, r.type.group, r.name ?? "");

  if (isReviewResource(r.type)) {
    if (method !== "POST")
      throw new ApiError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
    return sendJson(res, 201, answerReview(r.type, await readJsonBody(req), user, ctx.access));
  }

  if (method === "GET" && !r.name) {
    const filter = buildObjectFilter(q.get("labelSelector"), q.get("fieldSelector"));
    if (q.get("watch") === "true" || q.get("watch") === "1") {
      const timeout = q.get("timeoutSeconds");
      return serveWatch(req, res, ctx.store, {
        storeKey,
        namespace: r.namespace,
        filter,
        resourceVersion: q.get("resourceVersion"),
        timeoutSeconds: timeout ? Number(timeout) : undefined,
        asTable: wantsTable(req.headers.accept),
        includeObject: q.get("includeObject"),
        bookmarkMs: q.get("allowWatchBookmarks") === "true" ? (ctx.watchBookmarkMs ?? 60_000) : undefined,
        kind: r.type.kind,
        apiVersion: formatApiVersion(r.type.group, r.type.version),
      });
    }
    const items = ctx.store.list(storeKey, r.namespace).filter((o) => matchesFilter(filter, o));
    const rv = String(ctx.store.currentResourceVersion());
    if (wantsTable(req.headers.accept))
      return sendJson(res, 200, buildTable(storeKey, items, q.get("includeObject"), rv));
    return sendJson(res, 200, {
      kind: `${r.type.kind}List`,
      apiVersion: formatApiVersion(r.type.group, r.type.version),
      metadata: { resourceVersion: rv },
      items,
    });
  }

  if (method === "GET")
    return respondObject(req, res, 200, storeKey, ctx.store.mustGet(storeKey, r.namespace, r.name!), url);

  if (method === "POST" && !r.name) {
    const body = await readJsonBody(req);
    const obj = prepareNewObject(r, body);
    const fault = ctx.faults.take(
      "createError",
      `${r.type.resource} ${obj.metadata.namespace ?? ""}/${obj.metadata.name || obj.metadata.generateName || ""}`,
    );
    if (fault) throw internalError(fault.message ?? "etcdserver: request timed out (local-cluster fault createError)");
    admitCreate(storeKey, obj);
    const refusal =
      storeKey === "pods"
        ? checkPodSecurity(ctx.store.get("namespaces", undefined, r.namespace ?? ""), obj.metadata.name, obj.spec)
        : undefined;
    if (refusal) throw forbiddenByAdmission("pods", obj.metadata.name, refusal);
    if (q.get("dryRun") === "All") return respondObject(req, res, 201, storeKey, obj, url);
    if (r.namespace) ensureNamespace(ctx.store, r.namespace);
    return respondObject(req, res, 201, storeKey, ctx.store.create(storeKey, obj), url);
  }

  if (method === "PUT" && r.name) {
    const body = await readJsonBody(req);
    if (!body?.metadata) throw badRequest("the object has no metadata");
    if (body.metadata.name !== r.name)
      throw badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${r.name})`);
    const current = ctx.store.mustGet(storeKey, r.namespace, r.name);
    const next: KubeObject =
      r.subresource === "status"
        ? { ...current, status: body.status }
        : { ...body, status: body.status ?? current.status };
    next.metadata = { ...next.metadata, namespace: r.namespace };
    if (q.get("dryRun") === "All") return respondObject(req, res, 200, storeKey, next, url);
    return respondObject(
      req,
      res,
      200,
      storeKey,
      ctx.store.update(storeKey, next, body.metadata.resourceVersion || undefined),
      url,
    );
  }

  if (method === "PATCH" && r.name) {
    const type = String(req.headers["content-type"] ?? "");
    if (!/merge-patch\+json|strategic-merge-patch\+json/.test(type))
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the local cluster supports merge and strategic merge patches only, not ${type || "this patch type"}`,
      );
    const body = await readJsonBody(req);
    const current = ctx.store.mustGet(storeKey, r.namespace, r.name);
    const patched = applyMergePatch(
      current,
      r.subresource === "status" ? { status: body?.status } : body,
    ) as KubeObject;
    patched.metadata = {
      ...patched.metadata,
      name: current.metadata.name,
      namespace: current.metadata.namespace,
      uid: current.metadata.uid,
    };
    if (q.get("dryRun") === "All") return respondObject(req, res, 200, storeKey, patched, url);
    return respondObject(
      req,
      res,
      200,
      storeKey,
      ctx.store.update(storeKey, patched, body?.metadata?.resourceVersion || undefined),
      url,
    );
  }

  if (method === "DELETE") {
    const body = await readJsonBody(req).catch(() => undefined);
    const policy = (body?.propagationPolicy ?? q.get("propagationPolicy") ?? undefined) as
      PropagationPolicy | undefined;
    if (policy && !["Background", "Foreground", "Orphan"].includes(policy))
      throw badRequest(`invalid propagationPolicy ${policy}`);
    const graceText = body?.gracePeriodSeconds ?? q.get("gracePeriodSeconds") ?? undefined;
    const grace = graceText === undefined || graceText === null ? undefined : Number(graceText);
    const names = r.name
      ? [r.name]
      : ctx.store
          .list(storeKey, r.namespace)
          .filter((o) => matchesFilter(buildObjectFilter(q.get("labelSelector"), q.get("fieldSelector")), o))
          .map((o) => o.metadata.name);
    const deleted: KubeObject[] = [];
    for (const name of names) {
      if (body?.preconditions)
        checkPreconditions(
          r.type.resource,
          r.type.group,
          ctx.store.mustGet(storeKey, r.namespace, name),
          body.preconditions,
        );
      deleted.push(
        ctx.deleter.delete({
          storeKey,
          namespace: r.namespace,
          name,
          propagationPolicy: policy,
          gracePeriodSeconds: grace,
        }),
      );
    }
    if (r.name) return sendJson(res, 200, deleted[0]);
    return sendJson(res, 200, {
      kind: `${r.type.kind}List`,
      apiVersion: formatApiVersion(r.type.group, r.type.version),
      metadata: {},
      items: deleted,
    });
  }

  throw new ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
}

/** Checks a body against the URL and fills the server-owned metadata fields. */
function prepareNewObject(r: ResourceRequest, body: any): KubeObject {
  if (!body || typeof body !== "object") throw badRequest("the request body must be a JSON object");
  const apiVersion = formatApiVersion(r.type.group, r.type.version);
  if (body.apiVersion && body.apiVersion !== apiVersion)
    throw badRequest(
      `the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersion})`,
    );
  if (body.kind && body.kind !== r.type.kind)
    throw badRequest(`the kind in the data (${body.kind}) does not match the expected kind (${r.type.kind})`);
  const meta = body.metadata ?? {};
  if (r.namespace && meta.namespace && meta.namespace !== r.namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  const obj: KubeObject = {
    ...body,
    apiVersion,
    kind: r.type.kind,
    metadata: { ...meta, uid: randomUUID(), resourceVersion: "", creationTimestamp: "" },
  };
  if (r.namespace) obj.metadata.namespace = r.namespace;
  else delete obj.metadata.namespace;
  delete obj.metadata.deletionTimestamp;
  return obj;
}

async function servePodLog(ctx: ApiContext, res: ServerResponse, r: ResourceRequest, url: URL): Promise<void> {
  const pod = ctx.store.mustGet("pods", r.namespace, r.name!);
  const containerName = url.searchParams.get("container") ?? pod.spec?.containers?.[0]?.name;
  const container = ctx.kubelet.findContainer(r.namespace ?? "default", r.name!, containerName);
  if (!container || !ctx.podman)
    throw badRequest(`container "${containerName}" in pod "${r.name}" is waiting to start: ContainerCreating`);
  const tail = url.searchParams.get("tailLines");
  const child = ctx.podman.spawnLogs(
    container,
    url.searchParams.get("follow") === "true",
    tail ? Number(tail) : undefined,
  );
  res.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
  child.stdout!.pipe(res, { end: false });
  child.stderr!.pipe(res, { end: false });
  child.on("close", () => res.end());
  res.on("close", () => child.kill("SIGTERM"));
}
