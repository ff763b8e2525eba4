// The run container's default hardening: what a CI step running as root keeps, and what it loses (README, "Hardening").
import type { IPodSecurityContext } from "kubernetes-models/v1/PodSecurityContext";
import type { ISecurityContext } from "kubernetes-models/v1/SecurityContext";
import type { PodSecurityProfile } from "./pod-spec-config.js";

/**
 * The user and group every container of a `restricted` pod runs as (Pod Security Standard "restricted" wants a
 * non-root user; a number, since the kubelet cannot check a name is not root). The volumes belong to this group
 * (fsGroup), so the helper and the steps write /work, /outputs and the runner's directory as this user.
 */
export const RESTRICTED_UID = 1000;

/**
 * The capabilities the run container keeps after dropping ALL, each measured on debian:bookworm-slim with podman
 * (`--cap-drop=ALL` plus all but one of Docker's default set; README, "Hardening"):
 * - CHOWN: `chown`, and `useradd` writing /etc/shadow;
 * - DAC_OVERRIDE: root writing where it is not the owner (apt's download directory belongs to _apt, mode 0700;
 *   /etc/shadow is mode 0000 on RHEL-family images);
 * - FOWNER: chmod/chown of files root does not own (`useradd -m` setting up the home directory);
 * - SETUID, SETGID: apt's download method drops to the _apt user (`apt-get install` fails with "setgroups"/"setresuid");
 * - KILL: the runner's timeout and cancel signal a step's processes whatever user a step switched to.
 * Dropped: FSETID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, AUDIT_WRITE, MKNOD (no package install or chown needs them).
 */
export const RUN_CONTAINER_CAPABILITIES: readonly string[] = [
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "KILL",
  "SETGID",
  "SETUID",
];

/**
 * The pod's securityContext: the container runtime's default seccomp profile (the dangerous syscalls refused); under
 * `restricted`, a non-root user and group and the volumes' group too.
 */
export function buildPodSecurityContext(profile: PodSecurityProfile = "default"): IPodSecurityContext {
  if (profile === "restricted") {
    return {
      runAsNonRoot: true,
      runAsUser: RESTRICTED_UID,
      runAsGroup: RESTRICTED_UID,
      fsGroup: RESTRICTED_UID,
      seccompProfile: { type: "RuntimeDefault" },
    };
  }
  return { seccompProfile: { type: "RuntimeDefault" } };
}

/**
 * The run container's securityContext: no privilege escalation (no_new_privs: a setuid binary does not raise a
 * step's privileges) and only RUN_CONTAINER_CAPABILITIES.
 */
export function buildRunContainerSecurityContext(profile: PodSecurityProfile = "default"): ISecurityContext {
  if (profile === "restricted") return buildRestrictedContainerSecurityContext();
  return { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: [...RUN_CONTAINER_CAPABILITIES] } };
}

/** A container of a `restricted` pod: no capability, no escalation, never root (Pod Security Standard "restricted"). */
export function buildRestrictedContainerSecurityContext(): ISecurityContext {
  return { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ["ALL"] } };
}

/** A warm placeholder's securityContext: it only sleeps, so it keeps no capability at all. */
export function buildPlaceholderSecurityContext(): ISecurityContext {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };
}
