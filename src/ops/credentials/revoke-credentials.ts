// Revokes the scoped credential: deletes its RoleBinding, Role and ServiceAccount (every token of it dies with the ServiceAccount), and its kubeconfig file.
import { lstatSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { InputError } from "../../core/errors.js";
import type { ClusterTarget, CredentialsCluster } from "../../cluster/cluster.js";
import { describeCallFailure } from "./call-failure.js";
import { listObjectRefs, type CredentialIdentity } from "./credential-objects.js";

export interface RevokeReport {
  /** Each object, in the order it was applied, and whether this run deleted it or found it gone already. */
  readonly objects: ReadonlyArray<{ readonly ref: string; readonly deleted: boolean }>;
  /** The kubeconfig file removed, if one was named and there. */
  readonly removedFile?: string;
}

/**
 * Deletes the objects (already gone is fine, so a second revoke changes nothing and says so), then `outFile` when
 * given: a regular file, refused otherwise. Throws like issueCredentials.
 */
export async function revokeCredentials(
  cluster: CredentialsCluster,
  target: ClusterTarget,
  identity: CredentialIdentity,
  outFile?: string,
): Promise<RevokeReport> {
  if (outFile !== undefined) checkRemovable(outFile);
  let deleted: Set<string>;
  try {
    deleted = await cluster.deleteCredentialObjects(target.namespace, identity.name);
  } catch (error) {
    throw describeCallFailure(error, `could not delete the credential ${identity.namespace}/${identity.name}`);
  }
  const objects = listObjectRefs(identity).map((ref) => ({ ref, deleted: deleted.has(ref) }));
  let removedFile: string | undefined;
  if (outFile !== undefined && exists(outFile)) {
    rmSync(outFile, { force: true });
    removedFile = resolve(outFile);
  }
  return { objects, ...(removedFile ? { removedFile } : {}) };
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function checkRemovable(path: string): void {
  try {
    if (!lstatSync(path).isFile())
      throw new InputError(`--out: ${resolve(path)} is not a regular file; refusing to remove it`);
  } catch (error) {
    if (error instanceof InputError) throw error;
  }
}
