// Sizes for people: decimal units for the run's log and throughput, binary units for the cache store's listing, exact
// ones for limits.

/** `1.2 MB`: sizes in the log, decimal as the transfers' throughput is usually read. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}

/** 1023 B, 1.5 KiB, 12.3 MiB, 2.0 GiB. */
export function formatBinaryBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** 67108864 → "64 MiB (67108864 bytes)"; a count that is no whole KiB or MiB stays bytes. */
export function formatExactBytes(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit} (${bytes} bytes)`;
  }
  return `${bytes} bytes`;
}

/** 5368709120 → 5Gi, 1500000 → 1500000 bytes. */
export function formatByteQuantity(bytes: number): string {
  for (const [unit, size] of [
    ["Gi", 1024 ** 3],
    ["Mi", 1024 ** 2],
    ["Ki", 1024],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes} bytes`;
}
