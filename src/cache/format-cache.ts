// What `cache list` and `cache prune` print: a table or JSON, from the store's listing or prune report. Pure.
import { relative } from "node:path";
import { formatDuration } from "../core/duration.js";
import { formatBinaryBytes } from "../core/format-bytes.js";
import type { CacheEntry } from "../workflow/cache-types.js";
import type { PruneRemoval, PruneReport, StoreListing } from "./dir-store.js";

/** A key or repository as a terminal line can show it: JSON-quoted when it has control characters. */
function shown(name: string): string {
  return /[\u0000-\u001f\u007f]/.test(name) || name === "" ? JSON.stringify(name) : name;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function totalBytes(entries: readonly CacheEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.bytes, 0);
}

export function formatCacheList(listing: StoreListing, dir: string, now: number): string {
  const header = ["REPO", "KEY", "SIZE", "AGE", "LAST USED"];
  const rows = listing.entries.map((entry) => [
    shown(entry.repo),
    shown(entry.key),
    formatBinaryBytes(entry.bytes),
    formatDuration(Math.max(0, now - entry.createdAt)),
    `${formatDuration(Math.max(0, now - entry.lastUsedAt))} ago`,
  ]);
  const lines: string[] = [];
  if (rows.length > 0) {
    const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
    for (const row of [header, ...rows])
      lines.push(
        row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  "),
      );
  }
  for (const damaged of listing.damaged)
    lines.push(`damaged ${relative(dir, damaged.path)}: ${damaged.reason} (prune removes it)`);
  lines.push(`${countEntries(listing.entries.length)}, ${formatBinaryBytes(totalBytes(listing.entries))} in ${dir}`);
  return `${lines.join("\n")}\n`;
}

export function formatCacheListJson(listing: StoreListing, dir: string): string {
  return `${JSON.stringify({ dir, totalBytes: totalBytes(listing.entries), entries: listing.entries.map(entryJson), damaged: listing.damaged }, null, 2)}\n`;
}

export interface PruneLimits {
  readonly olderThanMs?: number;
  readonly maxBytes?: number;
}

export function formatPruneReport(report: PruneReport, dir: string, limits: PruneLimits): string {
  const lines = report.removed.map((removal) => `removed ${describeRemoval(removal, dir, limits)}`);
  const entries = report.removed
    .filter((removal) => "entry" in removal)
    .map((removal) => (removal as { entry: CacheEntry }).entry);
  const others = report.removed.length - entries.length;
  lines.push(
    `prune: removed ${countEntries(entries.length)} (${formatBinaryBytes(totalBytes(entries))})${others > 0 ? ` and ${plural(others, "other file")}` : ""}; kept ${countEntries(report.kept.length)} (${formatBinaryBytes(totalBytes(report.kept))}) in ${dir}`,
  );
  return `${lines.join("\n")}\n`;
}

export function formatPruneJson(report: PruneReport, dir: string): string {
  const removed = report.removed.map((removal) => {
    switch (removal.kind) {
      case "unused":
        return { kind: removal.kind, ...entryJson(removal.entry), idleMs: removal.idleMs };
      case "over-size":
        return { kind: removal.kind, ...entryJson(removal.entry) };
      case "damaged":
        return { kind: removal.kind, path: removal.path, reason: removal.reason };
      case "temp":
        return { kind: removal.kind, path: removal.path, bytes: removal.bytes, ageMs: removal.ageMs };
    }
  });
  return `${JSON.stringify({ dir, removed, kept: { entries: report.kept.length, bytes: totalBytes(report.kept) } }, null, 2)}\n`;
}

function describeRemoval(removal: PruneRemoval, dir: string, limits: PruneLimits): string {
  switch (removal.kind) {
    case "unused":
      return `${describeEntry(removal.entry)}: not used for ${formatDuration(removal.idleMs)}, longer than --older-than ${formatDuration(limits.olderThanMs ?? 0)}`;
    case "over-size":
      return `${describeEntry(removal.entry)}: least recently used while the cache was over --max-bytes ${formatBinaryBytes(limits.maxBytes ?? 0)}`;
    case "damaged":
      return `damaged entry ${relative(dir, removal.path)}: ${removal.reason}`;
    case "temp":
      return `temp file ${relative(dir, removal.path)} (${formatBinaryBytes(removal.bytes)}): untouched for ${formatDuration(removal.ageMs)}, left by a save that never finished`;
  }
}

function describeEntry(entry: CacheEntry): string {
  return `${shown(entry.repo)} ${shown(entry.key)} (${formatBinaryBytes(entry.bytes)})`;
}

function countEntries(count: number): string {
  return `${count} ${count === 1 ? "entry" : "entries"}`;
}

function entryJson(entry: CacheEntry): Record<string, unknown> {
  return {
    repo: entry.repo,
    key: entry.key,
    bytes: entry.bytes,
    sha256: entry.sha256,
    compression: entry.compression,
    createdAt: new Date(entry.createdAt).toISOString(),
    lastUsedAt: new Date(entry.lastUsedAt).toISOString(),
  };
}
