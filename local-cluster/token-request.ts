// Serves the TokenRequest subresource (POST serviceaccounts/NAME/token): a fresh bearer token for the ServiceAccount, valid for expirationSeconds.

import { badRequest, invalid } from "./api-error.js";
import type { ObjectStore } from "./store.js";
import { DEFAULT_AUDIENCES, type TokenAuthority } from "./tokens.js";

/** kube-apiserver's bounds on spec.expirationSeconds, and its default. */
export const MIN_EXPIRATION_SECONDS = 600;
export const MAX_EXPIRATION_SECONDS = 2 ** 32;
export const DEFAULT_EXPIRATION_SECONDS = 3600;

/** RFC 3339 to the second, as the API writes times. */
function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * Issues a token for the ServiceAccount `name` in `namespace` and returns the TokenRequest the API answers with
 * (its status carries the token and its expiry). Throws NotFound for a missing ServiceAccount, Invalid for an
 * expiration kube-apiserver would refuse. Bound object references are not supported.
 */
export function issueServiceAccountToken(
  store: ObjectStore,
  tokens: TokenAuthority,
  namespace: string,
  name: string,
  body: any,
): object {
  if (!body || typeof body !== "object") throw badRequest("the request body must be a TokenRequest");
  if (body.kind && body.kind !== "TokenRequest")
    throw badRequest(`the kind in the data (${body.kind}) does not match the expected kind (TokenRequest)`);
  const account = store.mustGet("serviceaccounts", namespace, name);
  const spec = body.spec ?? {};
  const seconds =
    spec.expirationSeconds === undefined || spec.expirationSeconds === null
      ? DEFAULT_EXPIRATION_SECONDS
      : Number(spec.expirationSeconds);
  if (!Number.isInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS) {
    throw invalid("TokenRequest", "authentication.k8s.io", name, [
      {
        reason: "FieldValueInvalid",
        field: "spec.expirationSeconds",
        message: `Invalid value: ${spec.expirationSeconds}: may not specify a duration less than 10 minutes`,
      },
    ]);
  }
  if (seconds > MAX_EXPIRATION_SECONDS) {
    throw invalid("TokenRequest", "authentication.k8s.io", name, [
      {
        reason: "FieldValueInvalid",
        field: "spec.expirationSeconds",
        message: `Invalid value: ${seconds}: may not specify a duration larger than 2^32 seconds`,
      },
    ]);
  }
  if (spec.boundObjectRef) throw badRequest("the local cluster does not bind tokens to objects (spec.boundObjectRef)");
  const audiences: string[] =
    Array.isArray(spec.audiences) && spec.audiences.length > 0 ? spec.audiences.map(String) : [...DEFAULT_AUDIENCES];
  const { token, record } = tokens.issue(
    { namespace, serviceAccount: name, serviceAccountUid: account.metadata.uid },
    seconds,
    audiences,
  );
  return {
    kind: "TokenRequest",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { name, namespace, creationTimestamp: formatTime(record.issuedAt) },
    spec: { audiences, expirationSeconds: seconds, boundObjectRef: null },
    status: { token, expirationTimestamp: formatTime(record.expiresAt) },
  };
}
