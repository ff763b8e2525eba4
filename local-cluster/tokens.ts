// Issues ServiceAccount bearer tokens (TokenRequest) and looks them up: random secrets remembered by their hash, with an expiry.

import { createHash, randomBytes } from "node:crypto";

/** What the cluster remembers of one token it issued (never the token itself). */
export interface IssuedToken {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The ServiceAccount's uid when the token was issued: a token outlives neither its ServiceAccount nor a namesake. */
  readonly serviceAccountUid: string;
  readonly audiences: readonly string[];
  readonly issuedAt: number;
  /** Epoch ms; from this moment on the token is refused. */
  expiresAt: number;
}

/** The audience a token gets when the request names none: the API server's own, as kube-apiserver defaults it. */
export const DEFAULT_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"] as const;

/** A token is `lc1.` and 43 base64url characters: 256 random bits. */
const TOKEN_PREFIX = "lc1.";

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export class TokenAuthority {
  readonly #byHash = new Map<string, IssuedToken>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Issues a fresh token for a ServiceAccount, valid for `expirationSeconds` from now. */
  issue(
    subject: { namespace: string; serviceAccount: string; serviceAccountUid: string },
    expirationSeconds: number,
    audiences: readonly string[],
  ): { token: string; record: IssuedToken } {
    const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
    const issuedAt = this.now();
    const record: IssuedToken = {
      ...subject,
      audiences: [...audiences],
      issuedAt,
      expiresAt: issuedAt + expirationSeconds * 1000,
    };
    this.#byHash.set(hashToken(token), record);
    return { token, record };
  }

  /** The record of a token this cluster issued, expired or not; undefined for any other string. */
  find(token: string): IssuedToken | undefined {
    return this.#byHash.get(hashToken(token));
  }

  /** Whether the record's lifetime is over. */
  isExpired(record: IssuedToken): boolean {
    return this.now() >= record.expiresAt;
  }

  /** Every token issued so far, newest last (for tests and state dumps; the secrets are not kept). */
  list(): IssuedToken[] {
    return [...this.#byHash.values()].sort((a, b) => a.issuedAt - b.issuedAt);
  }

  /** Ends the lifetime of every matching token now, as if its expiry had passed; returns how many. */
  expire(filter: { namespace?: string; serviceAccount?: string } = {}): number {
    let count = 0;
    const now = this.now();
    for (const record of this.#byHash.values()) {
      if (filter.namespace !== undefined && record.namespace !== filter.namespace) continue;
      if (filter.serviceAccount !== undefined && record.serviceAccount !== filter.serviceAccount) continue;
      if (record.expiresAt > now) {
        record.expiresAt = now;
        count += 1;
      }
    }
    return count;
  }
}
