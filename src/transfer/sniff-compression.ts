// Tells a cache archive's compression from its first bytes (the pod's word for it is not trusted).
import type { CacheCompression } from "../workflow/cache-types.js";

/** Bytes enough to tell: zstd's magic is four. */
export const SNIFF_BYTES = 4;

/**
 * "gzip" for 1f 8b, "zstd" for 28 b5 2f fd, undefined for anything else; "short" while fewer bytes than it takes to
 * tell are in (`ended`: no more will come, so a short head that starts like gzip is gzip, and gunzip says truncated).
 */
export function sniffCompression(
  head: Uint8Array,
  ended = false,
): Exclude<CacheCompression, "none"> | "short" | undefined {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  const zstd = [0x28, 0xb5, 0x2f, 0xfd];
  const prefix = head.subarray(0, SNIFF_BYTES);
  if (!prefix.every((byte, index) => byte === zstd[index]))
    return head.length === 1 && head[0] === 0x1f && !ended ? "short" : undefined;
  if (prefix.length === SNIFF_BYTES) return "zstd";
  return ended ? undefined : "short";
}

/** Says what the first bytes are, for a refusal. */
export function describeHead(head: Uint8Array): string {
  if (head.length === 0) return "the archive is empty";
  return `it starts with ${Buffer.from(head.subarray(0, SNIFF_BYTES)).toString("hex")}, neither gzip (1f8b) nor zstd (28b52ffd)`;
}
