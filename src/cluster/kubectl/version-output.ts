// Reads `kubectl version -o json`: the client's version and, when the server was reached, the server's.
import type { ServerVersion } from "../cluster.js";
import { readServerVersion } from "../server-version.js";

/** The client and server versions in kubectl's JSON (either may be missing: the server one when it was not reached). */
export function parseVersionOutput(stdout: string): { client?: ServerVersion; server?: ServerVersion } {
  let parsed: { clientVersion?: unknown; serverVersion?: unknown };
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    return {};
  }
  const client = readServerVersion(parsed?.clientVersion);
  const server = readServerVersion(parsed?.serverVersion);
  return { ...(client ? { client } : {}), ...(server ? { server } : {}) };
}
