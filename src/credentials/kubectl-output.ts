// Pure readers of what kubectl printed for the credential's calls: apply and delete lines, and the TokenRequest answer (whose token is never echoed).
import { InfraError } from "../errors.js";

/** What apply did to one object. */
export type ApplyAction = "created" | "configured" | "unchanged";

/** `serviceaccount/NAME created`, one per object, as kubectl apply prints them: reference → action. */
export function parseApplyOutput(stdout: string): Map<string, ApplyAction> {
  const actions = new Map<string, ApplyAction>();
  for (const line of stdout.split("\n")) {
    const match = /^(\S+) (created|configured|unchanged)$/.exec(line.trim());
    if (match) actions.set(match[1]!, match[2] as ApplyAction);
  }
  return actions;
}

/** `rolebinding.rbac.authorization.k8s.io "NAME" deleted` (any suffix), as kubectl delete prints them: the references, `TYPE/NAME`. */
export function parseDeleteOutput(stdout: string): Set<string> {
  const deleted = new Set<string>();
  for (const line of stdout.split("\n")) {
    const match = /^(\S+) "([^"]+)" deleted\b/.exec(line.trim());
    if (match) deleted.add(`${match[1]}/${match[2]}`);
  }
  return deleted;
}

/** The token and its expiry from the TokenRequest answer. */
export interface IssuedToken {
  readonly token: string;
  /** As the API server set it: it may cap a lifetime it finds too long. */
  readonly expiresAt: Date;
}

/**
 * Reads the TokenRequest kubectl printed. Throws InfraError (credentials-failed) when it holds no token; the
 * message never quotes what kubectl printed, since that may be a token.
 */
export function readTokenAnswer(stdout: string): IssuedToken {
  let answer: { kind?: unknown; status?: { token?: unknown; expirationTimestamp?: unknown } };
  try {
    answer = JSON.parse(stdout) as typeof answer;
  } catch {
    throw new InfraError("credentials-failed", `the TokenRequest answer is not JSON (${stdout.length} bytes; not shown, it may hold a token)`);
  }
  const token = answer?.status?.token;
  const expiry = answer?.status?.expirationTimestamp;
  if (typeof token !== "string" || token === "" || /\s/.test(token)) throw new InfraError("credentials-failed", "the TokenRequest answer holds no token");
  const expiresAt = typeof expiry === "string" ? new Date(expiry) : new Date(Number.NaN);
  if (Number.isNaN(expiresAt.getTime())) throw new InfraError("credentials-failed", "the TokenRequest answer holds no expirationTimestamp");
  return { token, expiresAt };
}
