// Where finished logs go, shared with the mill: a directory or an S3 bucket, each log at `<prefix>logs/<lease_id>.log`.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, rename } from "node:fs/promises";
import { dirname, join } from "node:path";

/** A finished log, stored: the ref the mill reads it by and the hash of its bytes. */
export interface StoredLog {
  readonly ref: string;
  readonly hash: string;
}

/** The shared log store. `put` is idempotent: storing the same file again (a restart's retry) overwrites it. */
export interface LogStore {
  /** Stores the file at `path` as `logs/<leaseId>.log`; resolves once it is durable there. */
  put(leaseId: string, path: string): Promise<StoredLog>;
  /** Words for messages: where the logs go. */
  readonly describe: string;
}

/** What `--log-store` and the AWS settings resolve to at the CLI edge. */
export type LogStoreSetting =
  | { readonly kind: "dir"; readonly dir: string }
  | {
      readonly kind: "s3";
      readonly bucket: string;
      /** Prepended to the ref, which is the key (`ci/` → `ci/logs/<lease>.log`); empty for none, as spindle's own store writes. */
      readonly prefix: string;
      readonly region: string;
      readonly endpoint?: string;
      readonly forcePathStyle?: boolean;
      readonly credentials?: {
        readonly accessKeyId: string;
        readonly secretAccessKey: string;
        readonly sessionToken?: string;
      };
    };

/** The ref of a lease's log, as the mill looks it up (the mill uses the ref as the S3 key, so a prefix is part of it). */
export function buildLogRef(leaseId: string, prefix = ""): string {
  return `${prefix}logs/${leaseId}.log`;
}

/** `sha256:<hex>` of a file's bytes, streamed. */
export async function hashLogFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest("hex")}`;
}

/** A directory store: the file is copied beside its place, then renamed into it, so the mill never reads half a log. */
export function createDirLogStore(dir: string): LogStore {
  return {
    describe: dir,
    async put(leaseId, path) {
      const ref = buildLogRef(leaseId);
      const target = join(dir, ref);
      await mkdir(dirname(target), { recursive: true });
      const temporary = `${target}.partial`;
      await copyFile(path, temporary);
      await rename(temporary, target);
      return { ref, hash: await hashLogFile(target) };
    },
  };
}
