// Judges the kubectl and server versions against what this runner is tested with: pure.
import type { ServerVersion } from "../../cluster/cluster.js";

/** A Kubernetes version (the cluster's interface reads it from kubectl or from /version). */
export type KubeVersion = ServerVersion;

/** kubectl minors whose every argument list the tests run through the real binary (test/cluster/kubectl/kubectl-args-real-kubectl.test.ts). */
export const FLAG_TESTED_MINORS = { from: 27, to: 33 } as const;
/** kubectl minors the end-to-end tests run on the local cluster. */
export const END_TO_END_MINORS: readonly number[] = [30, 33];

/** Whether this runner supports a kubectl: `ok` with how well it is tested, or `warn` outside what the tests cover. */
export function judgeKubectlVersion(version: KubeVersion): { status: "ok" | "warn"; note: string } {
  const { from, to } = FLAG_TESTED_MINORS;
  const range = `1.${from}–1.${to}`;
  if (version.major !== 1 || version.minor < from || version.minor > to)
    return { status: "warn", note: `untested with this runner (it is tested with kubectl ${range})` };
  if (END_TO_END_MINORS.includes(version.minor)) return { status: "ok", note: "supported: tested end to end" };
  return {
    status: "ok",
    note: `supported: its flags are tested (${range}; end to end: ${END_TO_END_MINORS.map((m) => `1.${m}`).join(" and ")})`,
  };
}

/** kubectl supports servers one minor older or newer than itself: the skew, when it is more than that. */
export function describeSkew(client: KubeVersion | undefined, server: KubeVersion): string | undefined {
  if (!client || client.major !== server.major) return undefined;
  const skew = Math.abs(client.minor - server.minor);
  return skew > 1
    ? `kubectl 1.${client.minor} and the server 1.${server.minor} are ${skew} minors apart (kubectl supports ±1)`
    : undefined;
}
