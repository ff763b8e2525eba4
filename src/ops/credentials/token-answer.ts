// Pure reader of the TokenRequest answer (whose token is never echoed); kubectl's apply and delete lines are read by the kubectl transport.
import { InfraError } from "../../core/errors.js";

/** The token and its expiry from the TokenRequest answer. */
export interface IssuedToken {
  readonly token: string;
  /** As the API server set it: it may cap a lifetime it finds too long. */
  readonly expiresAt: Date;
}

/**
 * Reads the TokenRequest answer (the object, or its JSON text). Throws InfraError (credentials-failed) when it holds no
 * token; the message never quotes the answer, since that may be a token.
 */
export function readTokenAnswer(answered: unknown): IssuedToken {
  let answer: { kind?: unknown; status?: { token?: unknown; expirationTimestamp?: unknown } } | null;
  try {
    answer = (typeof answered === "string" ? JSON.parse(answered) : answered) as typeof answer;
  } catch {
    throw new InfraError(
      "credentials-failed",
      `the TokenRequest answer is not JSON (${String(answered).length} bytes; not shown, it may hold a token)`,
    );
  }
  const token = answer?.status?.token;
  const expiry = answer?.status?.expirationTimestamp;
  if (typeof token !== "string" || token === "" || /\s/.test(token))
    throw new InfraError("credentials-failed", "the TokenRequest answer holds no token");
  const expiresAt = typeof expiry === "string" ? new Date(expiry) : new Date(Number.NaN);
  if (Number.isNaN(expiresAt.getTime()))
    throw new InfraError("credentials-failed", "the TokenRequest answer holds no expirationTimestamp");
  return { token, expiresAt };
}
