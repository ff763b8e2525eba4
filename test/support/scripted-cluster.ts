// A Cluster for unit tests that is no transport at all: replies scripted per method, every call recorded, so code above the seam is tested without kubectl.
import { PassThrough } from "node:stream";
import type { Cluster, EventWatchOptions, InvolvedObject, PodWatchOptions } from "../../src/cluster/cluster.js";
import { pollList, pollPods } from "../../src/cluster/poll-pods.js";
import { ClusterError } from "../../src/cluster/errors.js";
import type { ExecEnd, ExecRequest, ExecSession } from "../../src/cluster/exec.js";

type Method = { [K in keyof Cluster]: Cluster[K] extends (...args: never[]) => unknown ? K : never }[keyof Cluster];

/** A reply: a value to resolve with, an Error to reject with, or a function of the call's arguments making either. */
export type ClusterReply = unknown;

/** One call, as the test sees it after the action. */
export interface RecordedClusterCall {
  readonly method: Method;
  readonly args: readonly unknown[];
}

/** An exec session that writes `stdout` and ends as `end` says (a clean exit 0 by default). */
export function scriptedExec(
  script: {
    stdout?: string;
    end?: Partial<ExecEnd> & ({ kind: "exit"; code: number } | { kind: "failed"; error: ClusterError });
  } = {},
): ExecSession {
  const stdout = new PassThrough();
  const end: ExecEnd = {
    tags: "",
    stderr: "",
    how: "scripted",
    ...(script.end ?? { kind: "exit", code: 0 }),
  } as ExecEnd;
  setImmediate(() => stdout.end(script.stdout ?? ""));
  const ended = new Promise<ExecEnd>((resolve) => stdout.once("end", () => resolve(end)));
  return { stdout, stdin: null, ended, kill: () => stdout.destroy() };
}

/** Scripts and records Cluster calls; hand it to the code under test as its cluster. */
export class ScriptedCluster implements Cluster {
  readonly transport = "api" as const;
  readonly calls: RecordedClusterCall[] = [];
  readonly #replies = new Map<Method, { replies: ClusterReply[]; answered: number }>();

  /** Answers `method` with `replies` in order, the last one for every later call. */
  on(method: Method, ...replies: ClusterReply[]): this {
    this.#replies.set(method, { replies, answered: 0 });
    return this;
  }

  /** The recorded calls of one method. */
  callsTo(method: Method): RecordedClusterCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  #reply(method: Method, args: unknown[]): unknown {
    this.calls.push({ method, args });
    const rule = this.#replies.get(method);
    if (!rule) return new ClusterError("other", `no reply scripted for ${method}`);
    rule.answered += 1;
    const reply = rule.replies[Math.min(rule.answered, rule.replies.length) - 1];
    return typeof reply === "function" ? (reply as (...a: unknown[]) => unknown)(...args) : reply;
  }

  async #answer<T>(method: Method, args: unknown[]): Promise<T> {
    const reply = await this.#reply(method, args);
    if (reply instanceof Error) throw reply;
    return reply as T;
  }

  createJob = (...args: Parameters<Cluster["createJob"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["createJob"]>>>("createJob", args);
  getJob = (...args: Parameters<Cluster["getJob"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["getJob"]>>>("getJob", args);
  listJobs = (...args: Parameters<Cluster["listJobs"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["listJobs"]>>>("listJobs", args);
  patchJobAnnotations = (...args: Parameters<Cluster["patchJobAnnotations"]>) =>
    this.#answer<void>("patchJobAnnotations", args);
  deleteJob = (...args: Parameters<Cluster["deleteJob"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["deleteJob"]>>>("deleteJob", args);
  deleteJobs = (...args: Parameters<Cluster["deleteJobs"]>) => this.#answer<string[]>("deleteJobs", args);
  claimJob = (...args: Parameters<Cluster["claimJob"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["claimJob"]>>>("claimJob", args);
  getLease = (...args: Parameters<Cluster["getLease"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["getLease"]>>>("getLease", args);
  listLeases = (...args: Parameters<Cluster["listLeases"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["listLeases"]>>>("listLeases", args);
  createLease = (...args: Parameters<Cluster["createLease"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["createLease"]>>>("createLease", args);
  deleteLease = (...args: Parameters<Cluster["deleteLease"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["deleteLease"]>>>("deleteLease", args);
  updateLease = (...args: Parameters<Cluster["updateLease"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["updateLease"]>>>("updateLease", args);
  createDisruptionBudget = (...args: Parameters<Cluster["createDisruptionBudget"]>) =>
    this.#answer<void>("createDisruptionBudget", args);
  listDisruptionBudgets = (...args: Parameters<Cluster["listDisruptionBudgets"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["listDisruptionBudgets"]>>>("listDisruptionBudgets", args);
  deleteDisruptionBudget = (...args: Parameters<Cluster["deleteDisruptionBudget"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["deleteDisruptionBudget"]>>>("deleteDisruptionBudget", args);
  /** A reply is a function of (namespace, name, options) that may call options.onEvent; its result settles the watch. */
  watchJob = (...args: Parameters<Cluster["watchJob"]>) => this.#answer<void>("watchJob", args);
  listPods = (...args: Parameters<Cluster["listPods"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["listPods"]>>>("listPods", args);
  /** Polls the scripted listPods (each read recorded as a listPods call), as the kubectl transport does. */
  watchPods = (namespace: string | undefined, labelSelector: string, options: PodWatchOptions) =>
    pollPods((signal) => this.listPods(namespace, labelSelector, signal ? { signal } : {}), options);
  listEvents = (...args: Parameters<Cluster["listEvents"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["listEvents"]>>>("listEvents", args);
  /** Polls the scripted listEvents (each read recorded as a listEvents call), as the kubectl transport does. */
  watchEvents = (namespace: string | undefined, involved: InvolvedObject, options: EventWatchOptions) =>
    pollList((signal) => this.listEvents(namespace, involved, signal ? { signal } : {}), options);
  readContainerLog = (...args: Parameters<Cluster["readContainerLog"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["readContainerLog"]>>>("readContainerLog", args);
  /** A reply is an ExecSession (scriptedExec), or a function of the request making one. */
  exec = (request: ExecRequest) => this.#answer<ExecSession>("exec", [request]);
  getJobNowSync = (...args: Parameters<Cluster["getJobNowSync"]>) =>
    this.#reply("getJobNowSync", args) as ReturnType<Cluster["getJobNowSync"]>;
  deleteJobNowSync = (...args: Parameters<Cluster["deleteJobNowSync"]>) =>
    this.#reply("deleteJobNowSync", args) as ReturnType<Cluster["deleteJobNowSync"]>;
  formatDeleteJobCommand = (namespace: string | undefined, name: string) =>
    `kubectl${namespace ? ` --namespace ${namespace}` : ""} delete job ${name}`;
  describeTransport = (...args: Parameters<Cluster["describeTransport"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["describeTransport"]>>>("describeTransport", args);
  getServerVersion = (...args: Parameters<Cluster["getServerVersion"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["getServerVersion"]>>>("getServerVersion", args);
  readKubeconfig = (...args: Parameters<Cluster["readKubeconfig"]>) => this.#answer<unknown>("readKubeconfig", args);
  createReviews = (...args: Parameters<Cluster["createReviews"]>) => this.#answer<unknown[]>("createReviews", args);
  getNamespace = (...args: Parameters<Cluster["getNamespace"]>) => this.#answer<unknown>("getNamespace", args);
  listNodes = (...args: Parameters<Cluster["listNodes"]>) => this.#answer<unknown[]>("listNodes", args);
  getPersistentVolumeClaim = (...args: Parameters<Cluster["getPersistentVolumeClaim"]>) =>
    this.#answer<unknown>("getPersistentVolumeClaim", args);
  applyCredentialObjects = (...args: Parameters<Cluster["applyCredentialObjects"]>) =>
    this.#answer<Awaited<ReturnType<Cluster["applyCredentialObjects"]>>>("applyCredentialObjects", args);
  requestToken = (...args: Parameters<Cluster["requestToken"]>) => this.#answer<unknown>("requestToken", args);
  deleteCredentialObjects = (...args: Parameters<Cluster["deleteCredentialObjects"]>) =>
    this.#answer<Set<string>>("deleteCredentialObjects", args);
}
