// Issues the scoped credential: applies its objects, requests a token and writes the kubeconfig (0600); the token never leaves memory but for that file.
import { InfraError, InputError } from "../errors.js";
import type { Kubectl } from "../cluster/kubectl/kubectl.js";
import { summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import { describeCallFailure } from "./call-failure.js";
import { listObjectRefs, type PolicyRule } from "./credential-objects.js";
import { buildApplyDocuments, buildRequestObjects, buildTokenRequestBody, planIssueCalls, type CredentialRequest } from "./credential-plan.js";
import { parseApplyOutput, readTokenAnswer, type ApplyAction } from "./kubectl-output.js";
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
 * Runs the plan of `request` (planIssueCalls) with `kubectl`. Idempotent: objects that already match are left
 * unchanged (and reported so), ones that differ are corrected; every run issues a fresh token and rewrites the
 * file. Throws InputError (kubeconfig, plain-http server, an --out file with loose permissions) before the cluster
 * is touched, InfraError (forbidden, unauthorized, cluster-unreachable, credentials-failed) after.
 */
export async function issueCredentials(kubectl: Kubectl, request: CredentialRequest): Promise<IssueReport> {
  checkPrivateTarget(request.outFile);
  const [viewCall, applyCall, tokenCall] = planIssueCalls(request);
  const view = await kubectl.run(viewCall!.args);
  if (view.exitCode !== 0) throw new InputError(`kubectl cannot read the admin kubeconfig: ${summarizeStderr(view.stderr)}`);
  const admin = readAdminCluster(view.stdout);

  const objects = buildRequestObjects(request);
  const applied = await kubectl.run(applyCall!.args, { stdin: buildApplyDocuments(objects) });
  const actions = parseApplyOutput(applied.stdout);
  if (applied.exitCode !== 0) {
    const done = [...actions].map(([ref, action]) => `${ref} ${action}`).join(", ");
    throw describeCallFailure(applied, "could not apply the credential's objects", done ? `already applied: ${done}` : "");
  }
  const refs = listObjectRefs(request.identity);
  const missing = refs.filter((ref) => !actions.has(ref));
  if (missing.length > 0) throw new InfraError("credentials-failed", `kubectl apply did not report ${missing.join(", ")}: ${applied.stdout.trim() || "(no output)"}`);

  const issued = await kubectl.run(tokenCall!.args, { stdin: buildTokenRequestBody(request.tokenSeconds) });
  if (issued.exitCode !== 0) throw describeCallFailure(issued, `could not issue a token for ${refs[0]}`, "the objects are in place: run credentials again");
  const token = readTokenAnswer(issued.stdout);
  try {
    writePrivateFile(request.outFile, buildScopedKubeconfig(admin, request.identity, token.token));
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InfraError("credentials-failed", `could not write ${request.outFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}; the token is lost, the objects are in place: run credentials again`);
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
