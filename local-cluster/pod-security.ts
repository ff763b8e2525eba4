// Pod Security Admission's "restricted" level, as kube-apiserver enforces it for a namespace labelled pod-security.kubernetes.io/enforce: restricted.
import type { KubeObject } from "./types.js";

/** The namespace label that turns enforcement on, and the one level checked here (baseline is implied by restricted's checks that matter to us). */
export const ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

/**
 * The violations of the restricted profile (policy version latest), each in kube-apiserver's words: privileged,
 * allowPrivilegeEscalation, capabilities, runAsNonRoot, runAsUser 0, seccompProfile, hostPath volumes and host
 * namespaces. Empty: the pod is allowed.
 */
export function findRestrictedViolations(spec: any): string[] {
  const containers: any[] = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
  const pod = spec?.securityContext ?? {};
  const violations: string[] = [];
  const quote = (names: string[]): string => names.map((name) => `"${name}"`).join(", ");
  const which = (names: string[]): string => `${names.length === 1 ? "container" : "containers"} ${quote(names)}`;
  const host = ["hostNetwork", "hostPID", "hostIPC"].filter((key) => spec?.[key] === true);
  if (host.length > 0) violations.push(`host namespaces (${host.map((key) => `${key}=true`).join(", ")})`);
  const privileged = containers.filter((c) => c.securityContext?.privileged === true).map((c) => c.name);
  if (privileged.length > 0)
    violations.push(`privileged (${which(privileged)} must not set securityContext.privileged=true)`);
  const escalation = containers.filter((c) => c.securityContext?.allowPrivilegeEscalation !== false).map((c) => c.name);
  if (escalation.length > 0)
    violations.push(
      `allowPrivilegeEscalation != false (${which(escalation)} must set securityContext.allowPrivilegeEscalation=false)`,
    );
  const capabilities = containers
    .filter((c) => !(c.securityContext?.capabilities?.drop ?? []).includes("ALL"))
    .map((c) => c.name);
  if (capabilities.length > 0)
    violations.push(
      `unrestricted capabilities (${which(capabilities)} must set securityContext.capabilities.drop=["ALL"])`,
    );
  const added = containers
    .filter((c) => (c.securityContext?.capabilities?.add ?? []).some((cap: string) => cap !== "NET_BIND_SERVICE"))
    .map((c) => c.name);
  if (added.length > 0)
    violations.push(
      `unrestricted capabilities (${which(added)} must not include capabilities other than NET_BIND_SERVICE in securityContext.capabilities.add)`,
    );
  const hostPaths = (spec?.volumes ?? []).filter((v: any) => v.hostPath).map((v: any) => v.name);
  if (hostPaths.length > 0)
    violations.push(
      `restricted volume types (${hostPaths.length === 1 ? "volume" : "volumes"} ${quote(hostPaths)} ${hostPaths.length === 1 ? "uses" : "use"} restricted volume type "hostPath")`,
    );
  const rootAllowed = containers
    .filter((c) => (c.securityContext?.runAsNonRoot ?? pod.runAsNonRoot) !== true)
    .map((c) => c.name);
  if (rootAllowed.length > 0)
    violations.push(`runAsNonRoot != true (pod or ${which(rootAllowed)} must set securityContext.runAsNonRoot=true)`);
  const rootUser = containers.filter((c) => (c.securityContext?.runAsUser ?? pod.runAsUser) === 0).map((c) => c.name);
  if (rootUser.length > 0) violations.push(`runAsUser=0 (pod or ${which(rootUser)} must not set runAsUser=0)`);
  const seccomp = (c: any): string | undefined => c.securityContext?.seccompProfile?.type ?? pod.seccompProfile?.type;
  const noSeccomp = containers
    .filter((c) => !["RuntimeDefault", "Localhost"].includes(seccomp(c) ?? ""))
    .map((c) => c.name);
  if (noSeccomp.length > 0)
    violations.push(
      `seccompProfile (pod or ${which(noSeccomp)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    );
  return violations;
}

/** The refusal's message for pod `name`, as kube-apiserver words it; undefined when the namespace does not enforce restricted or the pod meets it. */
export function checkPodSecurity(namespace: KubeObject | undefined, name: string, spec: any): string | undefined {
  if (namespace?.metadata.labels?.[ENFORCE_LABEL] !== "restricted") return undefined;
  const violations = findRestrictedViolations(spec);
  return violations.length === 0
    ? undefined
    : `pods "${name}" is forbidden: violates PodSecurity "restricted:latest": ${violations.join(", ")}`;
}
