// An in-memory CacheStore for tests (the directory store is built elsewhere): the same semantics, scriptable faults, recorded calls.
import { createHash } from "node:crypto";
import { PassThrough, Readable, Writable } from "node:stream";
import {
  CacheCorruptError,
  type CacheCompression,
  type CacheEntry,
  type CacheLookup,
  type CacheSpec,
  type CacheStore,
  type CacheWriter,
} from "../../src/workflow/cache-types.js";
import { selectEntry } from "../../src/cache/select-entry.js";

interface Stored {
  readonly entry: CacheEntry;
  bytes: Buffer;
}

export class MemoryCacheStore implements CacheStore {
  readonly #entries = new Map<string, Stored>();
  /** Every call, in order: "lookup REPO KEY", "openRead REPO KEY", "beginSave REPO KEY", "commit REPO KEY", "abort REPO KEY", "remove REPO KEY". */
  readonly calls: string[] = [];
  #clock = 1_000;
  /** Makes lookups fail (the store cannot be read). */
  failLookups: Error | undefined;

  /** Puts an entry in directly, as an earlier run would have; `createdAt` orders fallbacks. */
  put(
    repo: string,
    key: string,
    bytes: Buffer,
    createdAt = this.#clock++,
    compression: CacheCompression = "gzip",
  ): CacheEntry {
    const entry: CacheEntry = {
      repo,
      key,
      bytes: bytes.length,
      sha256: sha256(bytes),
      compression,
      createdAt,
      lastUsedAt: createdAt,
    };
    this.#entries.set(`${repo}\0${key}`, { entry, bytes });
    return entry;
  }

  /** Changes an entry's bytes behind its checksum (a truncated or damaged file). */
  corrupt(repo: string, key: string, bytes: Buffer): void {
    const stored = this.#entries.get(`${repo}\0${key}`);
    if (!stored) throw new Error(`no entry ${key}`);
    stored.bytes = bytes;
  }

  get(repo: string, key: string): Buffer | undefined {
    return this.#entries.get(`${repo}\0${key}`)?.bytes;
  }

  keys(repo: string): string[] {
    return [...this.#entries.values()]
      .filter((s) => s.entry.repo === repo)
      .map((s) => s.entry.key)
      .sort();
  }

  async lookup(repo: string, spec: Pick<CacheSpec, "key" | "restoreKeys">): Promise<CacheLookup> {
    this.calls.push(`lookup ${repo} ${spec.key}`);
    if (this.failLookups) throw this.failLookups;
    return selectEntry(
      [...this.#entries.values()].filter((s) => s.entry.repo === repo).map((s) => s.entry),
      spec,
    );
  }

  openRead(entry: CacheEntry): Readable {
    this.calls.push(`openRead ${entry.repo} ${entry.key}`);
    const stored = this.#entries.get(`${entry.repo}\0${entry.key}`);
    const out = new PassThrough();
    const bytes = stored?.bytes ?? Buffer.alloc(0);
    // In two chunks, the checksum judged at the end, as a file store reads.
    setImmediate(() => {
      out.write(bytes.subarray(0, bytes.length >> 1));
      setImmediate(() => {
        out.write(bytes.subarray(bytes.length >> 1));
        if (sha256(bytes) !== entry.sha256) {
          this.#entries.delete(`${entry.repo}\0${entry.key}`);
          out.destroy(
            new CacheCorruptError(`entry ${entry.key}: sha256 ${sha256(bytes)} is not the saved ${entry.sha256}`),
          );
        } else out.end();
      });
    });
    return out;
  }

  async beginSave(repo: string, key: string, compression: CacheCompression): Promise<CacheWriter | "exists"> {
    this.calls.push(`beginSave ${repo} ${key}`);
    if (this.#entries.has(`${repo}\0${key}`)) return "exists";
    const chunks: Buffer[] = [];
    let done = false;
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    return {
      stream,
      commit: async (found?: CacheCompression) => {
        this.calls.push(`commit ${repo} ${key}`);
        if (done) throw new Error("committed twice");
        done = true;
        if (this.#entries.has(`${repo}\0${key}`)) return "exists";
        const bytes = Buffer.concat(chunks);
        const entry: CacheEntry = {
          repo,
          key,
          bytes: bytes.length,
          sha256: sha256(bytes),
          compression: found ?? compression,
          createdAt: this.#clock,
          lastUsedAt: this.#clock++,
        };
        this.#entries.set(`${repo}\0${key}`, { entry, bytes });
        return "saved";
      },
      abort: async () => {
        this.calls.push(`abort ${repo} ${key}`);
        done = true;
      },
    };
  }

  async remove(entry: CacheEntry): Promise<boolean> {
    this.calls.push(`remove ${entry.repo} ${entry.key}`);
    const stored = this.#entries.get(`${entry.repo}\0${entry.key}`);
    if (stored?.entry.sha256 !== entry.sha256 || stored.entry.createdAt !== entry.createdAt) return false;
    return this.#entries.delete(`${entry.repo}\0${entry.key}`);
  }
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
