// Issues the scoped credential: applies its objects, requests a token and writes the kubeconfig (0600); the token never leaves memory but for that file.
import { InfraError, InputError } from "../../core/errors.js";
import type { CredentialsCluster } from "../../cluster/cluster.js";
import { ClusterError } from "../../cluster/errors.js";
import { describeCallFailure } from "./call-failure.js";
import { listObjectRefs, type PolicyRule } from "./credential-objects.js";
import { buildRequestObjects, type CredentialRequest } from "./credential-plan.js";
import { buildTokenRequest } from "./credential-objects.js";
import type { ApplyAction } from "../../cluster/cluster.js";
import { readTokenAnswer } from "./token-answer.js";
import { checkPrivateTarget, writePrivateFile } from "./private-file.js";
import { buildScopedKubeconfig, readAdminCluster } from "./scoped-kubeconfig.js";

/** What one issue did: each object's fate, the Role's rules, the token's expiry (never the token), the file. */
export interface IssueReport {
  readonly server: string;
  readonly objects: ReadonlyArray<{ readonly ref: string; readonly action: ApplyAction }>;
  readonly rules: readonly PolicyRule[];
  readonly requestedSeconds: number;
  readonly expiresAt: Date;
  readonly outFile: string;
}

/**
 * Runs the plan of `request` (planIssueCalls) on `cluster`. Idempotent: objects that already match are left
 * unchanged (and reported so), ones that differ are corrected; every run issues a fresh token and rewrites the
 * file. Throws InputError (kubeconfig, plain-http server, an --out file with loose permissions) before the cluster
 * is touched, InfraError (forbidden, unauthorized, cluster-unreachable, credentials-failed) after.
 */
export async function issueCredentials(cluster: CredentialsCluster, request: CredentialRequest): Promise<IssueReport> {
  checkPrivateTarget(request.outFile);
  let view: unknown;
  try {
    view = await cluster.readKubeconfig({ flatten: true });
  } catch (error) {
    if (!(error instanceof ClusterError)) throw error;
    throw new InputError(`kubectl cannot read the admin kubeconfig: ${error.message}`);
  }
  const admin = readAdminCluster(view);

  const objects = buildRequestObjects(request);
  let applied;
  try {
    applied = await cluster.applyCredentialObjects(request.target.namespace, objects);
  } catch (error) {
    throw describeCallFailure(error, "could not apply the credential's objects");
  }
  const actions = applied.actions;
  if (applied.failure) {
    const done = [...actions].map(([ref, action]) => `${ref} ${action}`).join(", ");
    throw describeCallFailure(
      applied.failure,
      "could not apply the credential's objects",
      done ? `already applied: ${done}` : "",
    );
  }
  const refs = listObjectRefs(request.identity);
  const missing = refs.filter((ref) => !actions.has(ref));
  if (missing.length > 0)
    throw new InfraError(
      "credentials-failed",
      `kubectl apply did not report ${missing.join(", ")}: ${[...actions.keys()].join(", ") || "(no output)"}`,
    );

  let answer: unknown;
  try {
    answer = await cluster.requestToken(
      request.identity.namespace,
      request.identity.name,
      buildTokenRequest(request.tokenSeconds),
    );
  } catch (error) {
    throw describeCallFailure(
      error,
      `could not issue a token for ${refs[0]}`,
      "the objects are in place: run credentials again",
    );
  }
  const token = readTokenAnswer(answer);
  try {
    writePrivateFile(request.outFile, buildScopedKubeconfig(admin, request.identity, token.token));
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InfraError(
      "credentials-failed",
      `could not write ${request.outFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}; the token is lost, the objects are in place: run credentials again`,
    );
  }
  return {
    server: admin.server,
    objects: refs.map((ref) => ({ ref, action: actions.get(ref)! })),
    rules: (objects.role as { rules: PolicyRule[] }).rules,
    requestedSeconds: request.tokenSeconds,
    expiresAt: token.expiresAt,
    outFile: request.outFile,
  };
}
