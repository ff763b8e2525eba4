// The Cluster over kubectl: each call one kubectl process built by kubectl-args.ts, each failure typed by kubectl-errors.ts.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { PassThrough } from "node:stream";
import { describeError } from "../../core/errors.js";
import { formatCommand } from "../../events/format-event.js";
import { JsonDocumentSplitter, parseJsonDocuments } from "../../manifests/json-documents.js";
import { stringify } from "../../core/lazy-yaml.js";
import type {
  AppliedObjects,
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
import { pollList, pollPods } from "../poll-pods.js";
import { ClusterError, CutStreamError, TimeoutError, UnreadableAnswerError } from "../errors.js";
import { splitStatusTags, type ExecEnd, type ExecRequest, type ExecSession } from "../exec.js";
import {
  buildAnnotateJobArgs,
  buildApplyCredentialArgs,
  buildClaimBody,
  buildClaimJobArgs,
  buildClaimPlaceholderArgs,
  buildCreateLeaseArgs,
  buildDeleteLeaseArgs,
  buildDeleteLeaseAtVersionArgs,
  buildDeleteLeaseBody,
  buildGetLeaseArgs,
  buildListLeasesArgs,
  buildUpdateLeaseArgs,
  buildClientVersionArgs,
  buildConfigViewArgs,
  buildCreateArgs,
  buildCreateBudgetArgs,
  buildDeleteBudgetArgs,
  buildListBudgetsArgs,
  buildCreateReviewsArgs,
  buildDeleteCredentialArgs,
  buildDeleteJobArgs,
  buildDeleteJobsBySelectorArgs,
  buildDryRunCreateArgs,
  buildExecArgs,
  buildGetClaimArgs,
  buildGetEventsArgs,
  buildLogsArgs,
  buildGetJobArgs,
  buildGetNamespaceArgs,
  buildGetNodesArgs,
  buildGetPodsArgs,
  buildListJobsArgs,
  buildServerVersionArgs,
  buildTokenRequestArgs,
  buildViewConfigArgs,
  buildWatchJobArgs,
  type ClusterTarget,
} from "./kubectl-args.js";
import { mapKubectlFailure, summarizeStderr } from "./kubectl-errors.js";
import type { Kubectl, KubectlOutput } from "./kubectl.js";
import { parseApplyOutput, parseDeleteOutput } from "./kubectl-output.js";
import { openPooledStdout } from "./pooled-stdout.js";
import { parseVersionOutput } from "./version-output.js";

/** Where kubectl points, but the namespace, which every call names. */
export type KubectlConnection = Pick<ClusterTarget, "kubeconfig" | "context">;

/** `--request-timeout` for a bound in ms: whole seconds as `5s`, else `1500ms`. */
export function formatRequestTimeout(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${Math.ceil(ms)}ms`;
}

/** A call's bound when its caller gives none (the Cluster contract's default), as the builders' --request-timeout says. */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/**
 * How long after its bound a kubectl is killed, at most (a short bound gets as much again): its own --request-timeout
 * answers first, saying what it waited for; the kill ends a call that hangs where that flag does not reach (an exec
 * credential plugin, a stuck dial).
 */
export const KILL_AFTER_BOUND_MS = 5_000;

/** The call with its --request-timeout set to `timeout` (calls that never reach the API server have none, and keep none). */
export function withRequestTimeout(args: readonly string[], timeout: string): string[] {
  const at = args.indexOf("--request-timeout");
  if (at < 0 || at + 1 >= args.length) return [...args];
  return [...args.slice(0, at + 1), timeout, ...args.slice(at + 2)];
}

/** The call's words after the global connection flags (`get pods ...`), for messages. */
function stripConnectionFlags(args: readonly string[]): readonly string[] {
  let at = 0;
  while (at < args.length && ["--kubeconfig", "--context", "--namespace"].includes(args[at]!)) at += 2;
  return args.slice(at);
}

/** The exit code the command in the pod ended with, as kubectl reports it. */
const REMOTE_EXIT = /^command terminated with exit code (\d+)\s*$/m;

function withoutExitLine(stderr: string): string {
  return stderr
    .split("\n")
    .filter((line) => !/^command terminated with exit code \d+\s*$/.test(line))
    .join("\n");
}

/**
 * How a kubectl exec ended: `exit` when the pod's exit status is known (kubectl exited 0, or said `command terminated
 * with exit code N`), else `failed` with the typed error of kubectl's own failure: a kubectl stopped by a signal (our
 * kill) or one whose failure names nothing more specific is a cut stream.
 */
export function readExecEnd(exitCode: number, signal: NodeJS.Signals | null, stderr: string): ExecEnd {
  const { tags, rest } = splitStatusTags(stderr);
  const how = exitCode === -1 ? `kubectl ended by ${signal ?? "a signal"}` : `kubectl exit ${exitCode}`;
  if (exitCode === 0) return { kind: "exit", code: 0, tags, stderr: rest, how };
  const remote = REMOTE_EXIT.exec(rest);
  // kubectl's own line about the exit code is no part of what the command wrote.
  if (remote && Number(remote[1]) === exitCode)
    return { kind: "exit", code: exitCode, tags, stderr: withoutExitLine(rest), how };
  if (exitCode === -1)
    return {
      kind: "failed",
      error: new CutStreamError(`kubectl was stopped (${signal ?? "signal"})`),
      tags,
      stderr: rest,
      how,
    };
  const error = mapKubectlFailure(rest);
  return {
    kind: "failed",
    error: error.code === "other" ? new CutStreamError(error.message) : error,
    tags,
    stderr: rest,
    how,
  };
}

/** The credential's objects as apply reads them: YAML documents (kubectl 1.30 takes a stream that starts as JSON for one JSON document). */
export function buildApplyDocuments(objects: CredentialObjectSet): string {
  return (
    [objects.serviceAccount, objects.role, objects.roleBinding].map((o) => stringify(o).trimEnd()).join("\n---\n") +
    "\n"
  );
}

/** The first `limitBytes` bytes of text, as UTF-8 (a character cut in two is dropped by the decoder's replacement). */
function cutToBytes(text: string, limitBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  return bytes.length <= limitBytes ? text : bytes.subarray(0, limitBytes).toString("utf8");
}

/**
 * The Cluster as kubectl calls. Construct it at the CLI edge around the one Kubectl client; nothing runs at
 * construction. Every call but exec and the watch takes its CallOptions' `timeoutMs` (default 30 s) as kubectl's
 * --request-timeout (where the call has one: those that only read the kubeconfig do not), and kubectl is killed a
 * grace after it (KILL_AFTER_BOUND_MS at most), rejecting with TimeoutError: a call that hangs cannot hold a run. An exec streams for as long as its command runs; a watch is bounded at 5 min by its builder.
 */
export class KubectlCluster implements Cluster {
  readonly transport = "kubectl" as const;
  readonly #kubectl: Kubectl;
  readonly #connection: KubectlConnection;

  constructor(kubectl: Kubectl, connection: KubectlConnection = {}) {
    this.#kubectl = kubectl;
    this.#connection = {
      ...(connection.kubeconfig === undefined ? {} : { kubeconfig: connection.kubeconfig }),
      ...(connection.context === undefined ? {} : { context: connection.context }),
    };
  }

  /** The kubectl client underneath (its binary names the commands printed for operators). */
  get kubectl(): Kubectl {
    return this.#kubectl;
  }

  #target(namespace: Namespace): ClusterTarget {
    return namespace === undefined ? this.#connection : { ...this.#connection, namespace };
  }

  /** Runs one call; resolves with its stdout, or throws the typed error of its failure. */
  async #call(args: readonly string[], options: CallOptions = {}, stdin?: string): Promise<string> {
    const result = await this.#run(args, options, stdin);
    if (result.timeout) throw result.timeout;
    if (result.exitCode !== 0) throw mapKubectlFailure(result.stderr);
    return result.stdout;
  }

  /** Runs one call within its bound (see the class): the output, and the TimeoutError when kubectl had to be killed. */
  async #run(
    args: readonly string[],
    options: CallOptions = {},
    stdin?: string,
  ): Promise<KubectlOutput & { timeout?: TimeoutError }> {
    const boundMs = options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const bounded = options.timeoutMs === undefined ? args : withRequestTimeout(args, formatRequestTimeout(boundMs));
    const graceMs = Math.min(KILL_AFTER_BOUND_MS, boundMs);
    const result = await this.#kubectl.run(bounded, {
      ...(stdin === undefined ? {} : { stdin }),
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutMs: boundMs + graceMs,
    });
    if (!result.timedOut || options.signal?.aborted) return result;
    const verb = stripConnectionFlags(bounded).slice(0, 2).join(" ");
    return {
      ...result,
      timeout: new TimeoutError(
        `kubectl ${verb} did not end within ${formatRequestTimeout(boundMs)} and ${formatRequestTimeout(graceMs)} more: killed`,
      ),
    };
  }

  async #callJson<T>(args: readonly string[], options: CallOptions = {}, stdin?: string): Promise<T> {
    return parseJson<T>(await this.#call(args, options, stdin));
  }

  async createJob(
    namespace: Namespace,
    job: IJob,
    options: CallOptions & { readonly dryRun?: boolean } = {},
  ): Promise<IJob> {
    const target = this.#target(namespace);
    const args = options.dryRun
      ? buildDryRunCreateArgs(target, formatRequestTimeout(options.timeoutMs ?? 30_000))
      : buildCreateArgs(target);
    const stdout = await this.#call(args, options, JSON.stringify(job));
    const created = parseJsonOrUndefined<IJob>(stdout);
    if (created) return created;
    // An answer that is not JSON (a wrapper's noise): the Job was created all the same. With the namespace named, the
    // manifest stands for it; without, where it landed is unknown.
    if (namespace !== undefined) return { ...job, metadata: { ...job.metadata, namespace } } as IJob;
    throw new UnreadableAnswerError(
      `kubectl created the Job but its answer names no namespace: ${stdout.slice(0, 200)}`,
    );
  }

  getJob(namespace: Namespace, name: string, options?: CallOptions): Promise<IJob> {
    return this.#callJson<IJob>(buildGetJobArgs(this.#target(namespace), name), options);
  }

  async listJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IJob[]> {
    return readItems<IJob>(await this.#callJson(buildListJobsArgs(this.#target(namespace), labelSelector), options));
  }

  async patchJobAnnotations(
    namespace: Namespace,
    name: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<void> {
    await this.#call(buildAnnotateJobArgs(this.#target(namespace), name, annotations), options);
  }

  async deleteJob(
    namespace: Namespace,
    name: string,
    options: CallOptions & { readonly preconditions?: { readonly uid: string; readonly resourceVersion: string } } = {},
  ): Promise<"deleted" | "absent"> {
    try {
      if (options.preconditions) {
        // The raw path needs the namespace; the caller read the object, so it knows it.
        await this.#call(
          buildClaimPlaceholderArgs(this.#target(namespace), namespace ?? "default", name),
          options,
          buildClaimBody(options.preconditions.uid, options.preconditions.resourceVersion),
        );
      } else {
        // --ignore-not-found: kubectl exits 0 whether the Job was there or not.
        await this.#call(buildDeleteJobArgs(this.#target(namespace), name), options);
      }
      return "deleted";
    } catch (error) {
      if (error instanceof ClusterError && error.code === "not-found") return "absent";
      throw error;
    }
  }

  async deleteJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<string[]> {
    const stdout = await this.#call(buildDeleteJobsBySelectorArgs(this.#target(namespace), labelSelector), options);
    // kubectl prints one `job.batch "NAME" deleted` line per Job.
    return [...stdout.matchAll(/^job(?:\.batch)? "([^"]+)" deleted/gm)].map((match) => match[1]!);
  }

  async claimJob(
    namespace: Namespace,
    name: string,
    resourceVersion: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<IJob> {
    return this.#callJson<IJob>(
      buildClaimJobArgs(this.#target(namespace), name, resourceVersion, annotations),
      options,
    );
  }

  getLease(namespace: Namespace, name: string, options?: CallOptions): Promise<ILease> {
    return this.#callJson<ILease>(buildGetLeaseArgs(this.#target(namespace), name), options);
  }

  async listLeases(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<ILease[]> {
    return readItems<ILease>(
      await this.#callJson(buildListLeasesArgs(this.#target(namespace), labelSelector), options),
    );
  }

  createLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease> {
    return this.#callJson<ILease>(buildCreateLeaseArgs(this.#target(namespace)), options, JSON.stringify(lease));
  }

  updateLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease> {
    return this.#callJson<ILease>(buildUpdateLeaseArgs(this.#target(namespace)), options, JSON.stringify(lease));
  }

  async deleteLease(
    namespace: Namespace,
    name: string,
    options: CallOptions & { readonly resourceVersion?: string } = {},
  ): Promise<"deleted" | "absent"> {
    try {
      if (options.resourceVersion === undefined) {
        // --ignore-not-found: kubectl says nothing for a Lease that was not there.
        const stdout = await this.#call(buildDeleteLeaseArgs(this.#target(namespace), name), options);
        return /deleted/.test(stdout) ? "deleted" : "absent";
      }
      await this.#call(
        buildDeleteLeaseAtVersionArgs(this.#target(namespace), namespace ?? "default", name),
        options,
        buildDeleteLeaseBody(options.resourceVersion),
      );
      return "deleted";
    } catch (error) {
      if (error instanceof ClusterError && error.code === "not-found") return "absent";
      throw error;
    }
  }

  async createDisruptionBudget(
    namespace: Namespace,
    budget: IPodDisruptionBudget,
    options?: CallOptions,
  ): Promise<void> {
    await this.#call(buildCreateBudgetArgs(this.#target(namespace)), options, JSON.stringify(budget));
  }

  async listDisruptionBudgets(
    namespace: Namespace,
    labelSelector: string,
    options?: CallOptions,
  ): Promise<IPodDisruptionBudget[]> {
    return readItems<IPodDisruptionBudget>(
      await this.#callJson(buildListBudgetsArgs(this.#target(namespace), labelSelector), options),
    );
  }

  async deleteDisruptionBudget(
    namespace: Namespace,
    name: string,
    options?: CallOptions,
  ): Promise<"deleted" | "absent"> {
    // --ignore-not-found: kubectl says nothing for a budget that was not there.
    const stdout = await this.#call(buildDeleteBudgetArgs(this.#target(namespace), name), options);
    return /deleted/.test(stdout) ? "deleted" : "absent";
  }

  async watchJob(namespace: Namespace, name: string, options: WatchOptions<IJob>): Promise<void> {
    const process = this.#kubectl.stream(
      buildWatchJobArgs(this.#target(namespace), name),
      options.signal ? { signal: options.signal } : {},
    );
    const splitter = new JsonDocumentSplitter();
    let failure: unknown;
    process.stdout.setEncoding("utf8");
    process.stdout.on("data", (text: string) => {
      if (failure !== undefined) return;
      let documents: unknown[];
      try {
        documents = splitter.push(text);
      } catch (error) {
        failure = new CutStreamError(`kubectl printed something other than JSON: ${describeError(error)}`);
        process.kill();
        return;
      }
      try {
        for (const document of documents) {
          const event = readWatchEvent(document);
          if (event) options.onEvent(event);
        }
      } catch (error) {
        failure = error;
        process.kill();
      }
    });
    const exit = await process.exited;
    if (failure !== undefined) throw failure;
    if (options.signal?.aborted || exit.exitCode === 0) return;
    if (exit.exitCode === -1) throw new CutStreamError(`kubectl was stopped (${exit.signal ?? "signal"})`);
    throw mapKubectlFailure(exit.stderr);
  }

  async listPods(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IPod[]> {
    return readItems<IPod>(await this.#callJson(buildGetPodsArgs(this.#target(namespace), labelSelector), options));
  }

  /** By polling listPods (src/cluster/poll-pods.ts): kubectl has no watch a process could share between runs. */
  watchPods(namespace: Namespace, labelSelector: string, options: PodWatchOptions): Promise<void> {
    return pollPods((signal) => this.listPods(namespace, labelSelector, signal ? { signal } : {}), options);
  }

  async listEvents(namespace: Namespace, involved: InvolvedObject, options?: CallOptions): Promise<IEvent[]> {
    return readItems<IEvent>(
      await this.#callJson(buildGetEventsArgs(this.#target(namespace), involved.kind, involved.name), options),
    );
  }

  /** By polling listEvents (src/cluster/poll-pods.ts), as watchPods polls listPods. */
  watchEvents(namespace: Namespace, involved: InvolvedObject, options: EventWatchOptions): Promise<void> {
    return pollList((signal) => this.listEvents(namespace, involved, signal ? { signal } : {}), options);
  }

  async readContainerLog(
    namespace: Namespace,
    pod: string,
    container: string,
    bounds: LogBounds,
    options?: CallOptions,
  ): Promise<string> {
    const text = await this.#call(
      buildLogsArgs(this.#target(namespace), pod, container, bounds.tailLines, bounds.limitBytes),
      options,
    );
    return cutToBytes(text, bounds.limitBytes);
  }

  async exec(request: ExecRequest): Promise<ExecSession> {
    const args = buildExecArgs(
      this.#target(request.namespace),
      request.pod,
      request.command,
      request.stdin.kind !== "none",
      request.container,
    );
    // Reusable read buffers are an optimization: where the temp dir cannot hold the socket, a pipe does the job.
    let fallback: string | undefined;
    const pooled = request.reuseBuffers
      ? await openPooledStdout().catch((error: unknown) => {
          fallback = `reading kubectl's output through a pipe (${describeError(error)})`;
          return undefined;
        })
      : undefined;
    const process = this.#kubectl.stream(args, {
      ...(request.stdin.kind === "pipe" ? { stdin: true } : {}),
      ...(request.stdin.kind === "stream" ? { stdinFrom: request.stdin.from } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
      ...(pooled ? { stdout: pooled } : {}),
    });
    if (request.stdin.kind === "stream") request.stdin.from.destroy(); // kubectl has its own copy of the descriptor
    const ended = process.exited.then((exit) => readExecEnd(exit.exitCode, exit.signal, exit.stderr));
    ended.finally(() => pooled?.readable.destroy()).catch(() => {});
    // Node resumes a child's untouched stdout once the child exits, dropping what it had not handed on: a reader that
    // starts after an await (the download makes its directory first) loses the archive's middle. A PassThrough holds it.
    const stdout = request.reuseBuffers && !pooled ? process.stdout.pipe(new PassThrough()) : process.stdout;
    return {
      stdout,
      stdin: process.stdin,
      ended,
      kill: () => process.kill(),
      ...(fallback === undefined ? {} : { fallback }),
      ...(pooled ? { giveBack: (chunk: Buffer) => pooled.giveBack(chunk) } : {}),
    };
  }

  getJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<IJob> {
    const read = this.#kubectl.runSync(buildGetJobArgs(this.#target(namespace), name), timeoutMs);
    if (read.exitCode !== 0) return { ok: false, why: summarizeStderr(read.stderr) };
    try {
      return { ok: true, value: JSON.parse(read.stdout) as IJob };
    } catch {
      return { ok: false, why: "kubectl printed no JSON" };
    }
  }

  deleteJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<"deleted" | "absent"> {
    const exit = this.#kubectl.runSync(buildDeleteJobArgs(this.#target(namespace), name), timeoutMs);
    return exit.exitCode === 0 ? { ok: true, value: "deleted" } : { ok: false, why: summarizeStderr(exit.stderr) };
  }

  formatDeleteJobCommand(namespace: Namespace, name: string): string {
    return formatCommand(this.#kubectl.binary, buildDeleteJobArgs(this.#target(namespace), name));
  }

  async describeTransport(options?: CallOptions): Promise<TransportFacts> {
    const clientVersion = parseVersionOutput(await this.#call(buildClientVersionArgs(), options)).client;
    return { name: "kubectl", binary: this.#kubectl.binary, ...(clientVersion ? { clientVersion } : {}) };
  }

  async getServerVersion(options: CallOptions = {}): Promise<ServerVersion> {
    const version = parseVersionOutput(
      await this.#call(
        buildServerVersionArgs(this.#connection, formatRequestTimeout(options.timeoutMs ?? 30_000)),
        options,
      ),
    ).server;
    if (!version) throw new ClusterError("other", "the API server did not say its version");
    return version;
  }

  readKubeconfig(options: CallOptions & { readonly flatten?: boolean } = {}): Promise<unknown> {
    return this.#callJson(
      options.flatten ? buildConfigViewArgs(this.#connection) : buildViewConfigArgs(this.#connection),
      options,
    );
  }

  async createReviews(reviews: readonly object[], options: CallOptions = {}): Promise<unknown[]> {
    const body =
      reviews.length === 1
        ? JSON.stringify(reviews[0])
        : JSON.stringify({ apiVersion: "v1", kind: "List", items: reviews });
    const stdout = await this.#call(
      buildCreateReviewsArgs(this.#connection, formatRequestTimeout(options.timeoutMs ?? 30_000)),
      options,
      body,
    );
    let documents: unknown[];
    try {
      documents = parseJsonDocuments(stdout);
    } catch {
      throw new ClusterError("other", `kubectl printed no JSON: ${stdout.slice(0, 200)}`);
    }
    return documents.flatMap((doc) =>
      (doc as { kind?: unknown } | null)?.kind === "List"
        ? (((doc as { items?: unknown[] }).items ?? []) as unknown[])
        : [doc],
    );
  }

  getNamespace(name: string, options: CallOptions = {}): Promise<unknown> {
    return this.#callJson(
      buildGetNamespaceArgs(this.#connection, name, formatRequestTimeout(options.timeoutMs ?? 30_000)),
      options,
    );
  }

  async listNodes(options: CallOptions = {}): Promise<unknown[]> {
    return readItems(
      await this.#callJson(
        buildGetNodesArgs(this.#connection, formatRequestTimeout(options.timeoutMs ?? 30_000)),
        options,
      ),
    );
  }

  getPersistentVolumeClaim(namespace: Namespace, name: string, options: CallOptions = {}): Promise<unknown> {
    return this.#callJson(
      buildGetClaimArgs(this.#target(namespace), name, formatRequestTimeout(options.timeoutMs ?? 30_000)),
      options,
    );
  }

  async applyCredentialObjects(
    namespace: Namespace,
    objects: CredentialObjectSet,
    options?: CallOptions,
  ): Promise<AppliedObjects> {
    const result = await this.#run(
      buildApplyCredentialArgs(this.#target(namespace)),
      options,
      buildApplyDocuments(objects),
    );
    const actions = parseApplyOutput(result.stdout);
    if (result.timeout) return { actions, failure: result.timeout };
    return result.exitCode === 0 ? { actions } : { actions, failure: mapKubectlFailure(result.stderr) };
  }

  async requestToken(namespace: string, serviceAccount: string, body: object, options?: CallOptions): Promise<unknown> {
    const result = await this.#run(
      buildTokenRequestArgs(this.#connection, namespace, serviceAccount),
      options,
      JSON.stringify(body),
    );
    if (result.timeout) throw result.timeout;
    if (result.exitCode !== 0) throw mapKubectlFailure(result.stderr);
    try {
      return JSON.parse(result.stdout) as unknown;
    } catch {
      // Never quoted: it may hold a token.
      throw new ClusterError(
        "other",
        `the TokenRequest answer is not JSON (${result.stdout.length} bytes; not shown, it may hold a token)`,
      );
    }
  }

  async deleteCredentialObjects(namespace: Namespace, name: string, options?: CallOptions): Promise<Set<string>> {
    return parseDeleteOutput(await this.#call(buildDeleteCredentialArgs(this.#target(namespace), name), options));
  }
}

function parseJson<T>(stdout: string): T {
  try {
    return JSON.parse(stdout) as T;
  } catch {
    throw new ClusterError("other", `kubectl printed no JSON: ${stdout.slice(0, 200)}`);
  }
}

function parseJsonOrUndefined<T>(stdout: string): T | undefined {
  try {
    return JSON.parse(stdout) as T;
  } catch {
    return undefined;
  }
}

/** The items of a List kubectl printed; a list without items is empty, anything else is not a list. */
function readItems<T>(list: unknown): T[] {
  const items = (list as { items?: unknown } | null)?.items;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new ClusterError("other", "kubectl printed a list without items");
  return items as T[];
}

/** One document of a watch stream: `{type, object}`; anything else is skipped. */
function readWatchEvent(document: unknown): { type: "ADDED" | "MODIFIED" | "DELETED"; object: IJob } | undefined {
  if (typeof document !== "object" || document === null) return undefined;
  const { type, object } = document as { type?: unknown; object?: unknown };
  if ((type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") || typeof object !== "object" || object === null)
    return undefined;
  return { type, object: object as IJob };
}
