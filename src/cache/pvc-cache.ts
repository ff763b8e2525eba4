// The PVC cache backend for the run: restore and save of one cache as in-pod command sequences over an injected exec.
import { CacheCorruptError, type CacheSpec } from "../workflow/cache-types.js";
import {
  parsePvcEvict,
  parsePvcList,
  parsePvcRestore,
  parsePvcSave,
  PvcOutputError,
  type PvcCommandOutput,
} from "./pvc-output.js";
import {
  buildPvcEvictCommand,
  buildPvcListCommand,
  buildPvcRestoreCommand,
  buildPvcSaveCommand,
} from "./pvc-scripts.js";
import { describeError } from "../core/errors.js";
import type { Namespace, RunCluster } from "../cluster/cluster.js";
import { describeExecSaid } from "../cluster/exec.js";
import { runExec } from "../cluster/run-exec.js";
import { RUN_CONTAINER } from "../manifests/names.js";
import { selectEntry } from "./select-entry.js";

/** The most a claim's listing may print: it grows with the entries, far past a helper's few lines. */
const LISTING_MAX_BYTES = 64 * 1024 * 1024;

/** Runs one argv in the run pod (no stdin) and gives back how it ended: an exec, or a test's sandbox. */
export type PodExec = (argv: readonly string[]) => Promise<PvcCommandOutput>;

/**
 * The PodExec of the run pod: one exec per command, no stdin, bounded by the run's signal when given. An exec that
 * gave no exit status counts as exit -1, its error's words as its stderr.
 */
export function createClusterPodExec(
  cluster: Pick<RunCluster, "exec">,
  namespace: Namespace,
  pod: string,
  signal?: AbortSignal,
): PodExec {
  return async (argv) => {
    const { end, stdout } = await runExec(
      cluster,
      {
        namespace,
        pod,
        container: RUN_CONTAINER,
        command: argv,
        ...(signal ? { signal } : {}),
      },
      undefined,
      LISTING_MAX_BYTES,
    );
    return end.kind === "exit"
      ? { exitCode: end.code, stdout, stderr: `${end.tags}${end.stderr}` }
      : { exitCode: -1, stdout, stderr: `${end.tags}${end.stderr}${describeExecSaid(end)}\n` };
  };
}

/** What a restore found and extracted (`bytes`: the stored archive's, read in the pod). */
export type PvcRestoreResult =
  | { readonly kind: "exact" | "fallback"; readonly restoredKey: string; readonly bytes: number }
  | { readonly kind: "miss" };

/** What a save did; "skipped" with why (no path existed in the pod). */
export type PvcSaveResult =
  | { readonly status: "saved" | "exists"; readonly bytes: number }
  | { readonly status: "skipped"; readonly reason: string };

export interface PvcCacheDriverOptions {
  readonly exec: PodExec;
  /** The repository entries are keyed by (settings.cacheBackend.repo). */
  readonly repo: string;
  /** The claim's name, for the log line. */
  readonly claim: string;
  /** The claim's byte budget (settings.cacheBackend.maxBytes): each save evicts down to it. */
  readonly maxBytes: number;
  /** Makes temporary names unique across pods: formatPvcNonce(runId). */
  readonly nonce: string;
  /** Epoch ms: the creation time a saved entry records. */
  readonly now: () => number;
  /** Told what went wrong after an entry was saved (the eviction): the save stands, the next one evicts again. */
  readonly warn?: (message: string) => void;
}

/** A run id as a nonce: every other character becomes `-`, at most 64 characters, never empty. */
export function formatPvcNonce(runId: string): string {
  return runId.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 64) || "run";
}

/**
 * The two calls the run's cache steps make (src/cache/cache-driver.ts's CacheDriver): every byte stays in the pod and
 * on the claim. Both throw for a failure (an exec cut before its result line, the pod's tar failing, a corrupt entry
 * as CacheCorruptError after the pod removed it), which the run reports as a warning.
 */
export function createPvcCacheDriver(options: PvcCacheDriverOptions): {
  readonly description: string;
  restore(spec: CacheSpec): Promise<PvcRestoreResult>;
  save(spec: CacheSpec): Promise<PvcSaveResult>;
} {
  const { exec, repo, maxBytes, nonce } = options;
  return {
    description: `PersistentVolumeClaim ${options.claim}, mounted at /knotless-cache`,
    async restore(spec) {
      const lookup = selectEntry(parsePvcList(await exec(buildPvcListCommand(repo)), repo), spec);
      if (lookup.kind === "miss") return { kind: "miss" };
      const outcome = parsePvcRestore(await exec(buildPvcRestoreCommand(repo, lookup.entry.key, nonce)));
      switch (outcome.kind) {
        case "restored":
          return { kind: lookup.kind, restoredKey: lookup.entry.key, bytes: outcome.bytes };
        case "missing": // evicted between the list and the restore
          return { kind: "miss" };
        case "no-decoder":
          // The workflow's image changed under the key: a miss, never a failed run; the entry stays for images that have it.
          options.warn?.(
            `cache ${spec.key}: the entry ${lookup.entry.key} is ${outcome.compression}-compressed and the image has no ${outcome.compression}: not restored (a miss)`,
          );
          return { kind: "miss" };
        case "corrupt":
          throw new CacheCorruptError(
            `the entry of ${lookup.entry.key} is corrupt (removed from the claim): ${outcome.reason}`,
          );
        case "failed":
          throw new PvcOutputError(`restoring ${lookup.entry.key} in the pod failed: ${outcome.reason}`);
      }
    },
    async save(spec) {
      const outcome = parsePvcSave(
        await exec(
          buildPvcSaveCommand({ repo, key: spec.key, paths: spec.paths, maxBytes, createdAt: options.now(), nonce }),
        ),
      );
      switch (outcome.kind) {
        case "exists":
          return { status: "exists", bytes: 0 };
        case "empty":
          return { status: "skipped", reason: `none of its paths exists in the pod (${spec.paths.join(", ")})` };
        case "too-large":
          throw new PvcOutputError(
            `the archive (${outcome.bytes} bytes) is larger than the cache budget (${outcome.maxBytes} bytes): not kept`,
          );
        case "failed":
          throw new PvcOutputError(`saving ${spec.key} in the pod failed: ${outcome.reason}`);
        case "saved":
          break;
      }
      try {
        parsePvcEvict(await exec(buildPvcEvictCommand(maxBytes, nonce)));
      } catch (error) {
        options.warn?.(`cache ${spec.key} saved, but the claim's eviction failed: ${describeError(error)}`);
      }
      return { status: "saved", bytes: outcome.bytes };
    },
  };
}
