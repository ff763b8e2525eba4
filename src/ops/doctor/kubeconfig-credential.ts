// Reads what `kubectl config view --raw --minify -o json` says of the chosen context: its namespace, server and credential: pure.
import { X509Certificate } from "node:crypto";

/** The kind of credential the context's user holds, and what can be known of its expiry. Never the secret itself. */
export type Credential =
  | {
      readonly kind: "token";
      readonly jwt: { readonly expiresAt: number | undefined; readonly subject: string | undefined } | undefined;
    }
  | { readonly kind: "token-file" }
  | {
      readonly kind: "client-certificate";
      readonly expiresAt: number | undefined;
      readonly subject: string | undefined;
    }
  | { readonly kind: "exec"; readonly command: string }
  | { readonly kind: "auth-provider"; readonly name: string }
  | { readonly kind: "basic" }
  | { readonly kind: "none" };

export interface ContextFacts {
  /** The context's namespace, if it sets one. */
  readonly namespace: string | undefined;
  readonly server: string | undefined;
  readonly credential: Credential;
}

function base64UrlDecode(text: string): Buffer {
  return Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
}

/**
 * The expiry (`exp`, epoch ms) and subject (`sub`) of a JWT, or undefined when the token is not a JWT (a static
 * token, a bootstrap token). The signature is not checked: this reads, it does not trust.
 */
export function decodeJwtClaims(
  token: string,
): { expiresAt: number | undefined; subject: string | undefined } | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]+$/.test(part))) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(base64UrlDecode(parts[1]!).toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof claims !== "object" || claims === null) return undefined;
  const { exp, sub } = claims as { exp?: unknown; sub?: unknown };
  return {
    expiresAt: typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined,
    subject: typeof sub === "string" ? sub : undefined,
  };
}

/** The notAfter (epoch ms) and subject of a PEM client certificate given as base64 (client-certificate-data). */
function readCertificate(data: string): { expiresAt: number | undefined; subject: string | undefined } {
  try {
    const certificate = new X509Certificate(Buffer.from(data, "base64"));
    const expiresAt = Date.parse(certificate.validTo);
    return {
      expiresAt: Number.isFinite(expiresAt) ? expiresAt : undefined,
      subject: certificate.subject.replace(/\n/g, ", "),
    };
  } catch {
    return { expiresAt: undefined, subject: undefined };
  }
}

function readCredential(user: Record<string, unknown>): Credential {
  if (typeof user.token === "string" && user.token !== "") return { kind: "token", jwt: decodeJwtClaims(user.token) };
  if (typeof user.tokenFile === "string") return { kind: "token-file" };
  if (typeof user["client-certificate-data"] === "string")
    return { kind: "client-certificate", ...readCertificate(user["client-certificate-data"]) };
  if (typeof user["client-certificate"] === "string")
    return { kind: "client-certificate", expiresAt: undefined, subject: undefined };
  const exec = user.exec as { command?: unknown } | undefined;
  if (exec && typeof exec === "object")
    return { kind: "exec", command: typeof exec.command === "string" ? exec.command : "?" };
  const provider = user["auth-provider"] as { name?: unknown } | undefined;
  if (provider && typeof provider === "object")
    return { kind: "auth-provider", name: typeof provider.name === "string" ? provider.name : "?" };
  if (typeof user.username === "string") return { kind: "basic" };
  return { kind: "none" };
}

/** Reads the minified view (one context, one cluster, one user; the object, or its JSON text); undefined when it is not one. */
export function parseContextView(viewed: unknown): ContextFacts | undefined {
  let view: {
    contexts?: Array<{ context?: { namespace?: unknown } }>;
    clusters?: Array<{ cluster?: { server?: unknown } }>;
    users?: Array<{ user?: unknown }>;
  };
  try {
    view = (typeof viewed === "string" ? JSON.parse(viewed) : viewed) as typeof view;
  } catch {
    return undefined;
  }
  if (typeof view !== "object" || view === null) return undefined;
  const namespace = view.contexts?.[0]?.context?.namespace;
  const server = view.clusters?.[0]?.cluster?.server;
  const user = view.users?.[0]?.user;
  return {
    namespace: typeof namespace === "string" && namespace !== "" ? namespace : undefined,
    server: typeof server === "string" ? server : undefined,
    credential:
      typeof user === "object" && user !== null ? readCredential(user as Record<string, unknown>) : { kind: "none" },
  };
}
