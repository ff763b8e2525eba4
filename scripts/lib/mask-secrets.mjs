// Masks secret values (a credential file's, a kubeconfig's, a session token) in text the live-proof scripts show or keep.
import { readFileSync } from "node:fs";

/** Shorter values are not masked: masking "a" or "ok" would blank out ordinary words without protecting anything. */
const MIN_SECRET_LENGTH = 6;

/** The kubeconfig keys whose values are secrets (users[].user and auth-provider/exec config). */
const KUBECONFIG_SECRET_KEY =
  /^(token|client-key-data|password|id-token|refresh-token|access-token|client-secret|idp-certificate-authority-data)$/;

/**
 * The values of a credential file whose format this kit does not know: every string leaf of a JSON file; otherwise
 * each non-comment line, and the part after its first `=` or `:` with quotes removed (`password = "x"`, `key: x`).
 * Read only to mask them; never printed.
 */
export function collectCredentialSecrets(path) {
  const text = readFileSync(path, "utf8");
  const values = new Set();
  try {
    collectJsonStrings(JSON.parse(text), values);
  } catch {
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) continue;
      values.add(line);
      const separator = line.search(/[=:]/);
      if (separator > 0) values.add(unquote(line.slice(separator + 1).trim()));
    }
  }
  return keepLongEnough(values);
}

/** The secret values of a kubeconfig (YAML or JSON): tokens, client keys, passwords. Missing file: none. */
export function collectKubeconfigSecrets(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const values = new Set();
  try {
    collectJsonSecrets(JSON.parse(text), values);
  } catch {
    for (const line of text.split(/\r?\n/)) {
      const match = /^\s*(?:-\s+)?([A-Za-z-]+)\s*:\s*(\S.*?)\s*$/.exec(line);
      if (match && KUBECONFIG_SECRET_KEY.test(match[1])) values.add(unquote(match[2]));
    }
  }
  return keepLongEnough(values);
}

/** Every form a value may be printed in: as is, base64 (padded and not). */
export function expandSecretForms(secrets) {
  const forms = new Set();
  for (const secret of secrets) {
    forms.add(secret);
    const base64 = Buffer.from(secret, "utf8").toString("base64");
    forms.add(base64);
    forms.add(base64.replace(/=+$/, ""));
  }
  return keepLongEnough(forms).sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of every secret form replaced by `***`, longest first. */
export function maskText(text, secrets) {
  let masked = text;
  for (const form of expandSecretForms(secrets)) masked = masked.split(form).join("***");
  return masked;
}

/** True when any secret form occurs in `text`; used to refuse writing or showing it. */
export function containsSecret(text, secrets) {
  return expandSecretForms(secrets).some((form) => text.includes(form));
}

function collectJsonStrings(value, into) {
  if (typeof value === "string") into.add(value);
  else if (Array.isArray(value)) value.forEach((item) => collectJsonStrings(item, into));
  else if (value && typeof value === "object") Object.values(value).forEach((item) => collectJsonStrings(item, into));
}

function collectJsonSecrets(value, into) {
  if (Array.isArray(value)) value.forEach((item) => collectJsonSecrets(item, into));
  else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (typeof item === "string" && KUBECONFIG_SECRET_KEY.test(key)) into.add(item);
      else collectJsonSecrets(item, into);
    }
  }
}

function unquote(value) {
  return /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
}

function keepLongEnough(values) {
  return [...values].filter((value) => value.length >= MIN_SECRET_LENGTH);
}
