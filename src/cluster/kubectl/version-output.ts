// Reads `kubectl version -o json`: the client's version and, when the server was reached, the server's.
import type { ServerVersion } from "../cluster.js";

function readVersion(value: unknown): ServerVersion | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { gitVersion, major, minor } = value as { gitVersion?: unknown; major?: unknown; minor?: unknown };
  if (typeof gitVersion !== "string") return undefined;
  // `minor` may carry a suffix ("28+" on some distributions); gitVersion is the fallback.
  const fromGit = /^v(\d+)\.(\d+)/.exec(gitVersion);
  const majorNumber = Number.parseInt(String(major ?? fromGit?.[1] ?? ""), 10);
  const minorNumber = Number.parseInt(String(minor ?? fromGit?.[2] ?? ""), 10);
  if (!Number.isFinite(majorNumber) || !Number.isFinite(minorNumber)) return undefined;
  return { gitVersion, major: majorNumber, minor: minorNumber };
}

/** The client and server versions in kubectl's JSON (either may be missing: the server one when it was not reached). */
export function parseVersionOutput(stdout: string): { client?: ServerVersion; server?: ServerVersion } {
  let parsed: { clientVersion?: unknown; serverVersion?: unknown };
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    return {};
  }
  const client = readVersion(parsed?.clientVersion);
  const server = readVersion(parsed?.serverVersion);
  return { ...(client ? { client } : {}), ...(server ? { server } : {}) };
}
