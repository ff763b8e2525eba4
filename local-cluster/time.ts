// Kubernetes timestamps: RFC 3339 with second precision, as the API server writes them.

export function formatTimestamp(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

/** A short age like kubectl prints it: 42s, 5m, 3h, 2d. */
export function formatAge(since: string | undefined, now: Date = new Date()): string {
  if (!since) return "<unknown>";
  const seconds = Math.max(0, Math.floor((now.getTime() - Date.parse(since)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}
