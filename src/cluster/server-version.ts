// Reads a Kubernetes version object (`GET /version`, or a side of `kubectl version -o json`): the same for every transport.
import type { ServerVersion } from "./cluster.js";

/** The version, or undefined when `value` is not one: `minor` may carry a suffix ("28+"), gitVersion is the fallback. */
export function readServerVersion(value: unknown): ServerVersion | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { gitVersion, major, minor } = value as { gitVersion?: unknown; major?: unknown; minor?: unknown };
  if (typeof gitVersion !== "string") return undefined;
  const fromGit = /^v(\d+)\.(\d+)/.exec(gitVersion);
  const majorNumber = Number.parseInt(String(major ?? fromGit?.[1] ?? ""), 10);
  const minorNumber = Number.parseInt(String(minor ?? fromGit?.[2] ?? ""), 10);
  if (!Number.isFinite(majorNumber) || !Number.isFinite(minorNumber)) return undefined;
  return { gitVersion, major: majorNumber, minor: minorNumber };
}
