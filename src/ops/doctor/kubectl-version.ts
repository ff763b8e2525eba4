// Reads `kubectl version -o json` and judges the kubectl and server versions against what this runner is tested with: pure.

/** A Kubernetes version as `version -o json` prints it. */
export interface KubeVersion {
  readonly gitVersion: string;
  readonly major: number;
  readonly minor: number;
}

/** kubectl minors whose every argument list the tests run through the real binary (test/cluster/kubectl/kubectl-args-real-kubectl.test.ts). */
export const FLAG_TESTED_MINORS = { from: 27, to: 33 } as const;
/** kubectl minors the end-to-end tests run on the local cluster. */
export const END_TO_END_MINORS: readonly number[] = [30, 33];

function readVersion(value: unknown): KubeVersion | undefined {
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
export function parseVersionOutput(stdout: string): { client?: KubeVersion; server?: KubeVersion } {
  let parsed: { clientVersion?: unknown; serverVersion?: unknown };
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    return {};
  }
  const client = readVersion(parsed.clientVersion);
  const server = readVersion(parsed.serverVersion);
  return { ...(client ? { client } : {}), ...(server ? { server } : {}) };
}

/** Whether this runner supports a kubectl: `ok` with how well it is tested, or `warn` outside what the tests cover. */
export function judgeKubectlVersion(version: KubeVersion): { status: "ok" | "warn"; note: string } {
  const { from, to } = FLAG_TESTED_MINORS;
  const range = `1.${from}–1.${to}`;
  if (version.major !== 1 || version.minor < from || version.minor > to) return { status: "warn", note: `untested with this runner (it is tested with kubectl ${range})` };
  if (END_TO_END_MINORS.includes(version.minor)) return { status: "ok", note: "supported: tested end to end" };
  return { status: "ok", note: `supported: its flags are tested (${range}; end to end: ${END_TO_END_MINORS.map((m) => `1.${m}`).join(" and ")})` };
}

/** kubectl supports servers one minor older or newer than itself: the skew, when it is more than that. */
export function describeSkew(client: KubeVersion | undefined, server: KubeVersion): string | undefined {
  if (!client || client.major !== server.major) return undefined;
  const skew = Math.abs(client.minor - server.minor);
  return skew > 1 ? `kubectl 1.${client.minor} and the server 1.${server.minor} are ${skew} minors apart (kubectl supports ±1)` : undefined;
}
