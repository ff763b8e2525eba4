// Validation and defaulting of objects on create, for the kinds whose shape the cluster relies on (Job, Pod).

import { randomBytes } from "node:crypto";
import { invalid, type StatusCause } from "./api-error.js";
import type { KubeObject } from "./types.js";

const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Five random [a-z0-9] characters, like the suffix of a generated name. */
export function generateSuffix(): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  const bytes = randomBytes(5);
  return [...bytes].map((b) => alphabet[b % alphabet.length]).join("");
}

function validateName(name: string | undefined, causes: StatusCause[]): void {
  if (!name)
    causes.push({
      reason: "FieldValueRequired",
      field: "metadata.name",
      message: "Required value: name or generateName is required",
    });
  else if (name.length > 253 || !NAME_PATTERN.test(name))
    causes.push({
      reason: "FieldValueInvalid",
      field: "metadata.name",
      message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
    });
}

function validatePodSpec(spec: any, path: string, causes: StatusCause[]): void {
  const containers = spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    causes.push({ reason: "FieldValueRequired", field: `${path}.containers`, message: "Required value" });
    return;
  }
  containers.forEach((c: any, i: number) => {
    if (!c?.name)
      causes.push({ reason: "FieldValueRequired", field: `${path}.containers[${i}].name`, message: "Required value" });
    if (!c?.image)
      causes.push({ reason: "FieldValueRequired", field: `${path}.containers[${i}].image`, message: "Required value" });
  });
}

function defaultPodSpec(spec: any): void {
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.serviceAccountName ??= "default";
  spec.securityContext ??= {};
  for (const c of spec.containers ?? []) {
    c.terminationMessagePath ??= "/dev/termination-log";
    c.terminationMessagePolicy ??= "File";
    c.imagePullPolicy ??=
      String(c.image).endsWith(":latest") || !String(c.image).includes(":") ? "Always" : "IfNotPresent";
    c.resources ??= {};
  }
}

/** Checks and defaults an object about to be created; throws 422 Invalid with causes. Mutates `obj`. */
export function admitCreate(storeKey: string, obj: KubeObject): void {
  const causes: StatusCause[] = [];
  if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = obj.metadata.generateName + generateSuffix();
  validateName(obj.metadata.name, causes);
  if (storeKey === "jobs.batch") {
    const template = obj.spec?.template;
    if (!template?.spec)
      causes.push({ reason: "FieldValueRequired", field: "spec.template.spec", message: "Required value" });
    else {
      validatePodSpec(template.spec, "spec.template.spec", causes);
      const rp = template.spec.restartPolicy;
      if (rp !== "Never" && rp !== "OnFailure")
        causes.push({
          reason: "FieldValueNotSupported",
          field: "spec.template.spec.restartPolicy",
          message: `Unsupported value: "${rp ?? "Always"}": supported values: "OnFailure", "Never"`,
        });
    }
  }
  if (storeKey === "pods") validatePodSpec(obj.spec, "spec", causes);
  if (storeKey === "persistentvolumeclaims") validateClaimSpec(obj.spec, causes);
  if (causes.length > 0)
    throw invalid(
      obj.kind,
      storeKey.includes(".") ? storeKey.slice(storeKey.indexOf(".") + 1) : "",
      obj.metadata.name ?? "",
      causes,
    );

  if (storeKey === "jobs.batch") defaultJob(obj);
  if (storeKey === "persistentvolumeclaims") defaultClaim(obj);
  if (storeKey === "pods") {
    defaultPodSpec(obj.spec);
    obj.status ??= { phase: "Pending", qosClass: "BestEffort" };
  }
}

const ACCESS_MODES = ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"];

/** What kube-apiserver requires of a claim: access modes it knows, and a storage request. */
function validateClaimSpec(spec: any, causes: StatusCause[]): void {
  const modes = spec?.accessModes;
  if (!Array.isArray(modes) || modes.length === 0)
    causes.push({
      reason: "FieldValueRequired",
      field: "spec.accessModes",
      message: "Required value: at least 1 access mode is required",
    });
  else
    for (const mode of modes)
      if (!ACCESS_MODES.includes(mode))
        causes.push({
          reason: "FieldValueNotSupported",
          field: "spec.accessModes",
          message: `Unsupported value: "${mode}": supported values: ${ACCESS_MODES.map((m) => `"${m}"`).join(", ")}`,
        });
  if (spec?.resources?.requests?.storage === undefined)
    causes.push({ reason: "FieldValueRequired", field: "spec.resources[storage]", message: "Required value" });
}

/**
 * A claim is Bound at once to a volume of its own (a host directory, local-cluster/claims.ts), with the capacity it
 * asked for (not enforced), and the pvc-protection finalizer every claim gets.
 */
function defaultClaim(claim: KubeObject): void {
  claim.spec.volumeMode ??= "Filesystem";
  claim.spec.storageClassName ??= "local-dir";
  claim.spec.volumeName ??= `pvc-${claim.metadata.uid}`;
  claim.metadata.finalizers = [...new Set([...(claim.metadata.finalizers ?? []), "kubernetes.io/pvc-protection"])];
  claim.status = {
    phase: "Bound",
    accessModes: claim.spec.accessModes,
    capacity: { storage: claim.spec.resources.requests.storage },
  };
}

/** Job defaults and the controller-uid selector; needs the uid, so the caller assigns it first. */
function defaultJob(job: KubeObject): void {
  const spec = job.spec;
  spec.backoffLimit ??= 6;
  spec.completions ??= 1;
  spec.parallelism ??= 1;
  spec.completionMode ??= "NonIndexed";
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= "TerminatingOrFailed";
  const uid = job.metadata.uid;
  const labels = {
    "batch.kubernetes.io/controller-uid": uid,
    "batch.kubernetes.io/job-name": job.metadata.name,
    "controller-uid": uid,
    "job-name": job.metadata.name,
  };
  spec.selector ??= { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
  spec.template.metadata = {
    ...(spec.template.metadata ?? {}),
    labels: { ...(spec.template.metadata?.labels ?? {}), ...labels },
  };
  defaultPodSpec(spec.template.spec);
  job.metadata.labels = { ...labels, ...(job.metadata.labels ?? {}) };
  job.metadata.generation = 1;
  job.status ??= {};
}
