// The Cluster over the Kubernetes API from this process: JSON requests, shared watches, exec over WebSocket v5.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { PassThrough } from "node:stream";
import { finished } from "node:stream/promises";
import type {
  AppliedObjects,
  ApplyAction,
  CallOptions,
  Cluster,
  CredentialObjectSet,
  EventWatchOptions,
  InvolvedObject,
  LogBounds,
  Namespace,
  PodWatchOptions,
  ServerVersion,
  SyncOutcome,
  TransportFacts,
  WatchOptions,
} from "../cluster.js";
import { ClusterError, CutStreamError, NotFoundError, UnauthorizedError } from "../errors.js";
import { splitStatusTags, type ExecEnd, type ExecRequest, type ExecSession } from "../exec.js";
import { readServerVersion } from "../server-version.js";
import { MANAGED_SELECTOR } from "../../manifests/labels.js";
import type { ApiClient } from "./api-client.js";
import {
  buildDisruptionBudgetsPath,
  buildEventsPath,
  buildExecPath,
  buildExecQuery,
  buildInvolvedKindSelector,
  buildInvolvedSelector,
  buildJobsPath,
  buildLeasesPath,
  buildPodsPath,
  buildRbacPath,
  buildServiceAccountsPath,
  buildTokenRequestPath,
  CREATE_QUERY,
} from "./api-paths.js";
import { openExecSocket } from "./exec-socket.js";
import type { ResolvedKubeconfig } from "./kubeconfig.js";
import { SharedWatches, type SharedWatchOptions } from "./shared-watches.js";

export interface ApiClusterOptions {
  /** Bounds of the shared watches (tests shorten them). */
  readonly watch?: SharedWatchOptions;
  /** Exec pings and read deadline (default 5 s and 61 s, client-go's). */
  readonly execPingIntervalMs?: number;
  readonly execReadDeadlineMs?: number;
  /** How long an exec's socket may take to close after its exit Status (default 2 s). */
  readonly execCloseGraceMs?: number;
  /** The --kubeconfig file, named in the kubectl command printed for operators (formatDeleteJobCommand). */
  readonly kubeconfigPath?: string;
}

const STDERR_LIMIT = 64 * 1024;

/** `a=b,c==d` as its [key, value] pairs; undefined for a selector with anything but equalities (`!=`, `in`, `!a`, `a`). */
export function readEqualitySelector(selector: string): Array<[string, string]> | undefined {
  const terms: Array<[string, string]> = [];
  for (const part of selector.split(",")) {
    const match = /^\s*([A-Za-z0-9._/-]+)\s*==?\s*([A-Za-z0-9._-]*)\s*$/.exec(part);
    if (!match) return undefined;
    terms.push([match[1]!, match[2]!]);
  }
  return terms;
}
const enc = encodeURIComponent;

/** The Lease resource as a refusal names it. */
const LEASES = "leases.coordination.k8s.io";

/**
 * The Cluster as API requests over one ApiClient (one pool per identity) and one set of shared watches: construct it
 * once per cluster and identity and hand it to every run of the process. Nothing runs at construction.
 */
export class ApiCluster implements Cluster {
  readonly transport = "api" as const;
  readonly #client: ApiClient;
  readonly #watches: SharedWatches;
  readonly #options: ApiClusterOptions;

  constructor(client: ApiClient, options: ApiClusterOptions = {}) {
    this.#client = client;
    this.#watches = new SharedWatches(client, options.watch);
    this.#options = options;
  }

  /** The shared watches (how many run, for tests and doctor). */
  get watches(): SharedWatches {
    return this.#watches;
  }

  /** Stops the shared watches and closes every pooled connection. */
  async close(): Promise<void> {
    this.#watches.stopAll();
    await this.#client.close();
  }

  #ns(namespace: Namespace): string {
    return namespace ?? this.#client.kubeconfig.namespace;
  }

  #jobs(namespace: Namespace, name?: string): string {
    return buildJobsPath(this.#ns(namespace), name);
  }

  #call<T>(
    method: string,
    path: string,
    verb: string,
    resource: string,
    options: CallOptions = {},
    extra: { query?: Record<string, string | undefined>; body?: unknown; contentType?: string } = {},
  ): Promise<T> {
    return this.#client.request(method, path, {
      verb,
      resource,
      ...extra,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    }) as Promise<T>;
  }

  async createJob(
    namespace: Namespace,
    job: IJob,
    options: CallOptions & { readonly dryRun?: boolean } = {},
  ): Promise<IJob> {
    const query = { ...CREATE_QUERY, ...(options.dryRun ? { dryRun: "All" } : {}) };
    return this.#call<IJob>("POST", this.#jobs(namespace), "create", "jobs.batch", options, { query, body: job });
  }

  getJob(namespace: Namespace, name: string, options?: CallOptions): Promise<IJob> {
    return this.#call<IJob>("GET", this.#jobs(namespace, name), "get", "jobs.batch", options);
  }

  async listJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IJob[]> {
    return readItems<IJob>(
      await this.#call("GET", this.#jobs(namespace), "list", "jobs.batch", options, { query: { labelSelector } }),
    );
  }

  async patchJobAnnotations(
    namespace: Namespace,
    name: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<void> {
    await this.#call("PATCH", this.#jobs(namespace, name), "patch", "jobs.batch", options, {
      body: { metadata: { annotations } },
      contentType: "application/merge-patch+json",
    });
  }

  async deleteJob(
    namespace: Namespace,
    name: string,
    options: CallOptions & { readonly preconditions?: { readonly uid: string; readonly resourceVersion: string } } = {},
  ): Promise<"deleted" | "absent"> {
    const body = {
      apiVersion: "v1",
      kind: "DeleteOptions",
      propagationPolicy: "Background",
      ...(options.preconditions ? { preconditions: options.preconditions } : {}),
    };
    try {
      await this.#call("DELETE", this.#jobs(namespace, name), "delete", "jobs.batch", options, { body });
      return "deleted";
    } catch (error) {
      if (error instanceof NotFoundError) return "absent";
      throw error;
    }
  }

  async deleteJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<string[]> {
    const deleted: string[] = [];
    for (const job of await this.listJobs(namespace, labelSelector, options)) {
      const name = job.metadata?.name;
      if (name && (await this.deleteJob(namespace, name, options ?? {})) === "deleted") deleted.push(name);
    }
    return deleted;
  }

  claimJob(
    namespace: Namespace,
    name: string,
    resourceVersion: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<IJob> {
    // A resourceVersion in a merge patch is a precondition: the API server answers 409 when the Job changed since.
    return this.#call<IJob>("PATCH", this.#jobs(namespace, name), "patch", "jobs.batch", options, {
      body: { metadata: { resourceVersion, annotations } },
      contentType: "application/merge-patch+json",
    });
  }

  getLease(namespace: Namespace, name: string, options?: CallOptions): Promise<ILease> {
    return this.#call<ILease>("GET", buildLeasesPath(this.#ns(namespace), name), "get", LEASES, options);
  }

  async listLeases(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<ILease[]> {
    return readItems<ILease>(
      await this.#call("GET", buildLeasesPath(this.#ns(namespace)), "list", LEASES, options, {
        query: { labelSelector },
      }),
    );
  }

  createLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease> {
    return this.#call<ILease>("POST", buildLeasesPath(this.#ns(namespace)), "create", LEASES, options, {
      query: CREATE_QUERY,
      body: lease,
    });
  }

  updateLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease> {
    const name = lease.metadata?.name ?? "";
    return this.#call<ILease>("PUT", buildLeasesPath(this.#ns(namespace), name), "update", LEASES, options, {
      body: lease,
    });
  }

  async deleteLease(
    namespace: Namespace,
    name: string,
    options: CallOptions & { readonly resourceVersion?: string } = {},
  ): Promise<"deleted" | "absent"> {
    const body = {
      apiVersion: "v1",
      kind: "DeleteOptions",
      ...(options.resourceVersion === undefined ? {} : { preconditions: { resourceVersion: options.resourceVersion } }),
    };
    try {
      await this.#call("DELETE", buildLeasesPath(this.#ns(namespace), name), "delete", LEASES, options, { body });
      return "deleted";
    } catch (error) {
      if (error instanceof NotFoundError) return "absent";
      throw error;
    }
  }

  async createDisruptionBudget(
    namespace: Namespace,
    budget: IPodDisruptionBudget,
    options?: CallOptions,
  ): Promise<void> {
    await this.#call(
      "POST",
      buildDisruptionBudgetsPath(this.#ns(namespace)),
      "create",
      "poddisruptionbudgets.policy",
      options,
      { query: CREATE_QUERY, body: budget },
    );
  }

  async listDisruptionBudgets(
    namespace: Namespace,
    labelSelector: string,
    options?: CallOptions,
  ): Promise<IPodDisruptionBudget[]> {
    return readItems<IPodDisruptionBudget>(
      await this.#call(
        "GET",
        buildDisruptionBudgetsPath(this.#ns(namespace)),
        "list",
        "poddisruptionbudgets.policy",
        options,
        { query: { labelSelector } },
      ),
    );
  }

  async deleteDisruptionBudget(
    namespace: Namespace,
    name: string,
    options?: CallOptions,
  ): Promise<"deleted" | "absent"> {
    try {
      await this.#call(
        "DELETE",
        buildDisruptionBudgetsPath(this.#ns(namespace), name),
        "delete",
        "poddisruptionbudgets.policy",
        options,
      );
      return "deleted";
    } catch (error) {
      if (error instanceof NotFoundError) return "absent";
      throw error;
    }
  }

  /**
   * Serves the watch from the process's one watch of the namespace's Jobs of ours (MANAGED_SELECTOR), filtered by
   * name: every run's cancel watch shares it. Runs until the signal is aborted.
   */
  async watchJob(namespace: Namespace, name: string, options: WatchOptions<IJob>): Promise<void> {
    const controller = new AbortController();
    const stop = (): void => controller.abort();
    if (options.signal?.aborted) return;
    options.signal?.addEventListener("abort", stop, { once: true });
    let missing = false;
    try {
      await this.#watches.subscribe<IJob>(
        { path: this.#jobs(namespace), labelSelector: MANAGED_SELECTOR, resource: "jobs.batch" },
        {
          signal: controller.signal,
          onChange: (change) => {
            if (change.object.metadata?.name === name) options.onEvent(change);
          },
          onSynced: (known) => {
            if (![...known.values()].some((job) => job.metadata?.name === name)) {
              missing = true;
              controller.abort();
            }
          },
        },
      );
    } finally {
      options.signal?.removeEventListener("abort", stop);
    }
    if (missing && !options.signal?.aborted) throw new NotFoundError(`jobs.batch "${name}" not found`);
  }

  async listPods(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IPod[]> {
    return readItems<IPod>(
      await this.#call("GET", buildPodsPath(this.#ns(namespace)), "list", "pods", options, {
        query: { labelSelector },
      }),
    );
  }

  /**
   * Served from the process's one list-watch of the namespace's pods of ours (MANAGED_SELECTOR) when the selector is
   * of equalities that include it (a run's: buildRunSelector), filtered here; any other selector gets a watch of its own.
   */
  async watchPods(namespace: Namespace, labelSelector: string, options: PodWatchOptions): Promise<void> {
    const terms = readEqualitySelector(labelSelector);
    const shared = terms?.some(([key, value]) => `${key}=${value}` === MANAGED_SELECTOR) ?? false;
    const matches = (pod: IPod): boolean =>
      !shared || terms!.every(([key, value]) => pod.metadata?.labels?.[key] === value);
    const delivered = new Set<string>();
    await this.#watches.subscribe<IPod>(
      {
        path: buildPodsPath(this.#ns(namespace)),
        labelSelector: shared ? MANAGED_SELECTOR : labelSelector,
        resource: "pods",
      },
      {
        signal: options.signal ?? new AbortController().signal,
        onChange: (change) => {
          const name = change.object.metadata?.name ?? "";
          if (change.type !== "DELETED" && matches(change.object)) {
            delivered.add(name);
            options.onEvent(change);
          } else if (delivered.delete(name)) options.onEvent({ type: "DELETED", object: change.object });
        },
        onSynced: () => options.onSynced?.(),
      },
    );
  }

  async listEvents(namespace: Namespace, involved: InvolvedObject, options?: CallOptions): Promise<IEvent[]> {
    const fieldSelector = buildInvolvedSelector(involved.kind, involved.name);
    return readItems<IEvent>(
      await this.#call("GET", buildEventsPath(this.#ns(namespace)), "list", "events", options, {
        query: { fieldSelector },
      }),
    );
  }

  /** Served from the process's one list-watch of the namespace's events about that kind, filtered by name here. */
  async watchEvents(namespace: Namespace, involved: InvolvedObject, options: EventWatchOptions): Promise<void> {
    await this.#watches.subscribe<IEvent>(
      {
        path: buildEventsPath(this.#ns(namespace)),
        fieldSelector: buildInvolvedKindSelector(involved.kind),
        resource: "events",
      },
      {
        signal: options.signal ?? new AbortController().signal,
        onChange: (change) => {
          if (change.object.involvedObject?.name === involved.name) options.onEvent(change);
        },
        onSynced: () => options.onSynced?.(),
      },
    );
  }

  async readContainerLog(
    namespace: Namespace,
    pod: string,
    container: string,
    bounds: LogBounds,
    options: CallOptions = {},
  ): Promise<string> {
    const path = `/api/v1/namespaces/${enc(this.#ns(namespace))}/pods/${enc(pod)}/log`;
    return this.#client.requestText("GET", path, {
      verb: "get",
      resource: "pods/log",
      query: { container, tailLines: bounds.tailLines, limitBytes: bounds.limitBytes },
      maxBytes: bounds.limitBytes,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
  }

  async exec(request: ExecRequest): Promise<ExecSession> {
    // Take a child's stdout before the first await: node drains a child's untouched stdout once the child exits, and
    // a small archive's tar may exit before the socket opens.
    const stdinSource =
      request.stdin.kind === "stream"
        ? request.stdin.from.pipe(new PassThrough({ highWaterMark: 1024 * 1024 }))
        : undefined;
    const query = buildExecQuery(request.command, request.container, request.stdin.kind !== "none");
    const path = buildExecPath(this.#ns(request.namespace), request.pod);
    let target;
    try {
      target = await this.#client.prepareUpgrade(path, query);
    } catch (error) {
      if (request.stdin.kind === "stream") request.stdin.from.destroy();
      return failedSession(error instanceof ClusterError ? error : new ClusterError("other", String(error)));
    }
    const started = Date.now();
    const upgrade = `${path}?${query.toString()}`;
    const socket = await openExecSocket(target, {
      onAnswer: (status) =>
        this.#client.noteCall({ method: "GET", path: upgrade, status, durationMs: Date.now() - started }),
      stdin: stdinSource ?? (request.stdin.kind === "pipe" ? "pipe" : null),
      ...(request.signal ? { signal: request.signal } : {}),
      ...(this.#options.execPingIntervalMs === undefined ? {} : { pingIntervalMs: this.#options.execPingIntervalMs }),
      ...(this.#options.execReadDeadlineMs === undefined ? {} : { readDeadlineMs: this.#options.execReadDeadlineMs }),
      ...(this.#options.execCloseGraceMs === undefined ? {} : { closeGraceMs: this.#options.execCloseGraceMs }),
    });
    let stderr = "";
    socket.stderr.setEncoding("utf8");
    socket.stderr.on("data", (text: string) => {
      stderr += text;
      // Keep whole tag lines and the tail of the rest; tags are short and few.
      if (stderr.length > 4 * STDERR_LIMIT) stderr = keepBounded(stderr);
    });
    const ended = (async (): Promise<ExecEnd> => {
      const end = await socket.ended;
      await Promise.all([
        finished(socket.stdout).catch(() => undefined),
        finished(socket.stderr).catch(() => undefined),
      ]);
      const { tags, rest } = splitStatusTags(keepBounded(stderr));
      if (end.kind === "exit")
        return {
          kind: "exit",
          code: end.code,
          tags,
          stderr: rest.slice(-STDERR_LIMIT),
          how: `exit status ${end.code}`,
        };
      if (end.error instanceof UnauthorizedError) target.refused();
      return {
        kind: "failed",
        error: end.error,
        tags,
        stderr: rest.slice(-STDERR_LIMIT),
        how: end.error instanceof CutStreamError ? "stream cut" : end.error.message,
      };
    })();
    return { stdout: socket.stdout, stdin: socket.stdin, ended, kill: socket.kill, giveBack: () => undefined };
  }

  getJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<IJob> {
    const answer = this.#client.requestSync("GET", this.#jobs(namespace, name), undefined, timeoutMs);
    if ("error" in answer) return { ok: false, why: answer.error };
    if (answer.status !== 200) return { ok: false, why: describeSyncFailure(answer.status, answer.body) };
    try {
      return { ok: true, value: JSON.parse(answer.body) as IJob };
    } catch {
      return { ok: false, why: "the API server answered no JSON" };
    }
  }

  deleteJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<"deleted" | "absent"> {
    const answer = this.#client.requestSync(
      "DELETE",
      this.#jobs(namespace, name),
      { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background" },
      timeoutMs,
    );
    if ("error" in answer) return { ok: false, why: answer.error };
    if (answer.status === 404) return { ok: true, value: "absent" };
    if (answer.status >= 200 && answer.status < 300) return { ok: true, value: "deleted" };
    return { ok: false, why: describeSyncFailure(answer.status, answer.body) };
  }

  formatDeleteJobCommand(namespace: Namespace, name: string): string {
    const { kubeconfig } = this.#client;
    const file = this.#options.kubeconfigPath ? ` --kubeconfig ${shellQuote(this.#options.kubeconfigPath)}` : "";
    const context = kubeconfig.contextName ? ` --context ${shellQuote(kubeconfig.contextName)}` : "";
    return `kubectl${file}${context} --namespace ${shellQuote(this.#ns(namespace))} delete job ${shellQuote(name)} --cascade=background --ignore-not-found`;
  }

  async describeTransport(): Promise<TransportFacts> {
    return { name: "api" };
  }

  async getServerVersion(options?: CallOptions): Promise<ServerVersion> {
    const version = readServerVersion(await this.#call("GET", "/version", "get", "version", options));
    if (!version) throw new ClusterError("other", "the API server did not say its version");
    return version;
  }

  async readKubeconfig(): Promise<unknown> {
    return buildMinifiedKubeconfig(this.#client.kubeconfig);
  }

  async createReviews(reviews: readonly object[], options?: CallOptions): Promise<unknown[]> {
    return Promise.all(
      reviews.map((review) => {
        const { apiVersion, kind } = review as { apiVersion?: string; kind?: string };
        const resource = `${String(kind).toLowerCase()}s`;
        return this.#call(
          "POST",
          `/apis/${apiVersion}/${resource}`,
          "create",
          `${resource}.${String(apiVersion).split("/")[0]}`,
          options,
          { body: review },
        );
      }),
    );
  }

  getNamespace(name: string, options?: CallOptions): Promise<unknown> {
    return this.#call("GET", `/api/v1/namespaces/${enc(name)}`, "get", "namespaces", options);
  }

  async listNodes(options?: CallOptions): Promise<unknown[]> {
    return readItems(await this.#call("GET", "/api/v1/nodes", "list", "nodes", options));
  }

  getPersistentVolumeClaim(namespace: Namespace, name: string, options?: CallOptions): Promise<unknown> {
    return this.#call(
      "GET",
      `/api/v1/namespaces/${enc(this.#ns(namespace))}/persistentvolumeclaims/${enc(name)}`,
      "get",
      "persistentvolumeclaims",
      options,
    );
  }

  /** Creates each object, or replaces it when what the runner sets differs (kubectl apply's outcome, without its annotation). */
  async applyCredentialObjects(
    namespace: Namespace,
    objects: CredentialObjectSet,
    options?: CallOptions,
  ): Promise<AppliedObjects> {
    const actions = new Map<string, ApplyAction>();
    const ns = this.#ns(namespace);
    const kinds: Array<[object, string, string, readonly string[]]> = [
      [objects.serviceAccount, buildServiceAccountsPath(ns), "serviceaccount", []],
      [objects.role, buildRbacPath(ns, "roles"), "role.rbac.authorization.k8s.io", ["rules"]],
      [
        objects.roleBinding,
        buildRbacPath(ns, "rolebindings"),
        "rolebinding.rbac.authorization.k8s.io",
        ["subjects", "roleRef"],
      ],
    ];
    for (const [object, collection, kind, fields] of kinds) {
      const name = (object as { metadata?: { name?: string } }).metadata?.name ?? "";
      const resource = kind.replace(/^serviceaccount$/, "serviceaccounts").replace(/^(role|rolebinding)\./, "$1s.");
      try {
        let existing: Record<string, unknown> | undefined;
        try {
          existing = await this.#call<Record<string, unknown>>(
            "GET",
            `${collection}/${enc(name)}`,
            "get",
            resource,
            options,
          );
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
        if (!existing) {
          await this.#call("POST", collection, "create", resource, options, { body: object });
          actions.set(`${kind}/${name}`, "created");
          continue;
        }
        const wanted = object as Record<string, unknown> & { metadata?: { labels?: object; annotations?: object } };
        const same =
          fields.every((f) => JSON.stringify(existing![f] ?? null) === JSON.stringify(wanted[f] ?? null)) &&
          JSON.stringify((existing.metadata as { labels?: object }).labels ?? {}) ===
            JSON.stringify(wanted.metadata?.labels ?? {});
        if (same) {
          actions.set(`${kind}/${name}`, "unchanged");
          continue;
        }
        const metadata = { ...(existing.metadata as object), ...wanted.metadata };
        await this.#call("PUT", `${collection}/${enc(name)}`, "update", resource, options, {
          body: { ...existing, ...wanted, metadata },
        });
        actions.set(`${kind}/${name}`, "configured");
      } catch (error) {
        return { actions, failure: error instanceof ClusterError ? error : new ClusterError("other", String(error)) };
      }
    }
    return { actions };
  }

  requestToken(namespace: string, serviceAccount: string, body: object, options?: CallOptions): Promise<unknown> {
    return this.#call(
      "POST",
      buildTokenRequestPath(namespace, serviceAccount),
      "create",
      "serviceaccounts/token",
      options,
      { body },
    );
  }

  async deleteCredentialObjects(namespace: Namespace, name: string, options?: CallOptions): Promise<Set<string>> {
    const ns = this.#ns(namespace);
    const deleted = new Set<string>();
    const paths: Array<[string, string, string]> = [
      [
        buildRbacPath(ns, "rolebindings", name),
        "rolebinding.rbac.authorization.k8s.io",
        "rolebindings.rbac.authorization.k8s.io",
      ],
      [buildRbacPath(ns, "roles", name), "role.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io"],
      [buildServiceAccountsPath(ns, name), "serviceaccount", "serviceaccounts"],
    ];
    for (const [path, kind, resource] of paths) {
      try {
        await this.#call("DELETE", path, "delete", resource, options);
        deleted.add(`${kind}/${name}`);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
    }
    return deleted;
  }
}

/** Keeps every tag line and the last STDERR_LIMIT characters of the rest. */
function keepBounded(stderr: string): string {
  const { tags, rest } = splitStatusTags(stderr);
  return tags + rest.slice(-STDERR_LIMIT);
}

function failedSession(error: ClusterError): ExecSession {
  const stdout = new PassThrough();
  stdout.end();
  return {
    stdout,
    stdin: null,
    ended: Promise.resolve({ kind: "failed", error, tags: "", stderr: "", how: error.message }),
    kill: () => undefined,
    giveBack: () => undefined,
  };
}

function readItems<T>(list: unknown): T[] {
  const items = (list as { items?: unknown } | null)?.items;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new ClusterError("other", "the API server answered a list without items");
  return items as T[];
}

function describeSyncFailure(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: string };
    if (parsed.message) return parsed.message;
  } catch {
    // not a Status
  }
  return `the API server answered HTTP ${status}`;
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** `kubectl config view --minify --flatten`'s shape for the resolved context. Holds credentials: never print it. */
function buildMinifiedKubeconfig(k: ResolvedKubeconfig): object {
  const cluster = {
    server: k.server,
    ...(k.tls.ca ? { "certificate-authority-data": Buffer.from(k.tls.ca).toString("base64") } : {}),
    ...(k.tls.insecureSkipVerify ? { "insecure-skip-tls-verify": true } : {}),
    ...(k.tls.serverName ? { "tls-server-name": k.tls.serverName } : {}),
    ...(k.proxyUrl ? { "proxy-url": k.proxyUrl } : {}),
  };
  const auth = k.auth;
  const user = {
    ...(k.tls.cert && k.tls.key
      ? {
          "client-certificate-data": Buffer.from(k.tls.cert).toString("base64"),
          "client-key-data": Buffer.from(k.tls.key).toString("base64"),
        }
      : {}),
    ...(auth.kind === "token" ? { token: auth.token } : {}),
    ...(auth.kind === "token-file" ? { tokenFile: auth.path } : {}),
    ...(auth.kind === "basic" ? { username: auth.username, password: auth.password } : {}),
    ...(auth.kind === "exec"
      ? {
          exec: {
            apiVersion: auth.plugin.apiVersion,
            command: auth.plugin.command,
            args: auth.plugin.args,
            env: auth.plugin.env,
            provideClusterInfo: auth.plugin.provideClusterInfo,
          },
        }
      : {}),
  };
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: k.clusterName, cluster }],
    users: [{ name: k.userName, user }],
    contexts: [{ name: k.contextName, context: { cluster: k.clusterName, user: k.userName, namespace: k.namespace } }],
    "current-context": k.contextName,
  };
}
