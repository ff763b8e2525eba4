// What the secrets exec carries on stdin (export lines, then a receipt) and how its reply proves they all arrived.
import { buildEnvFile } from "./env-file.js";

/** The first words of the payload's last line: a shell no-op (`:`), so sourcing the file skips it. */
export const SECRETS_RECEIPT_TAG = ": knotless-secrets";

export interface SecretsPayload {
  /** The bytes for the exec's stdin: never logged, never written to a file on this host. */
  readonly text: string;
  /** The receipt line the pod must print back (without its newline): tag, nonce, number of secrets. */
  readonly receipt: string;
  /** Bytes of `text`, which the pod must report having received. */
  readonly bytes: number;
}

/** The payload for `secrets`; `nonce` is fresh per attempt, so a file left by an earlier attempt never matches. */
export function buildSecretsPayload(
  secrets: ReadonlyArray<{ readonly name: string; readonly value: string }>,
  nonce: string,
): SecretsPayload {
  const receipt = `${SECRETS_RECEIPT_TAG} ${nonce} ${secrets.length}`;
  const text = `${buildEnvFile(secrets)}${receipt}\n`;
  return { text, receipt, bytes: Buffer.byteLength(text) };
}

/**
 * Why the pod's reply (the receipt it found, or `none`, then the bytes it received) does not prove that every
 * secret arrived, or undefined when it does. The message never quotes what the pod printed: a reply is only ever
 * compared, so no part of a secret can reach a log through it.
 */
export function checkSecretsReply(payload: SecretsPayload, stdout: string): string | undefined {
  const [receipt = "", bytes = ""] = stdout.split("\n");
  const received = /^\s*\d+\s*$/.test(bytes) ? Number(bytes) : undefined;
  if (received !== undefined && received !== payload.bytes)
    return `the pod received ${received} of ${payload.bytes} bytes`;
  if (receipt !== payload.receipt)
    return received === undefined
      ? "the pod's reply is not a receipt and a byte count"
      : "the receipt at the end of the secrets is missing or different";
  if (received === undefined) return "the pod did not say how many bytes it received";
  return undefined;
}

/**
 * The secrets back from the file `secrets` installed (`helper.sh read-secrets`): its `export NAME='value'` lines, the
 * receipt line skipped. Returns undefined for text that is not such a file (nothing of it is ever quoted in a message).
 */
export function parseSecretsFile(text: string): Array<{ name: string; value: string }> | undefined {
  const secrets: Array<{ name: string; value: string }> = [];
  let at = 0;
  while (at < text.length) {
    if (text.startsWith(SECRETS_RECEIPT_TAG, at)) {
      const end = text.indexOf("\n", at);
      at = end < 0 ? text.length : end + 1;
      continue;
    }
    const head = /^export ([A-Za-z_][A-Za-z0-9_]*)='/.exec(text.slice(at, at + 300));
    if (!head) return undefined;
    at += head[0].length;
    let value = "";
    for (;;) {
      const quote = text.indexOf("'", at);
      if (quote < 0) return undefined;
      value += text.slice(at, quote);
      if (text.startsWith("'\\''", quote)) {
        value += "'";
        at = quote + 4;
        continue;
      }
      if (text[quote + 1] !== "\n") return undefined;
      at = quote + 2;
      break;
    }
    secrets.push({ name: head[1]!, value });
  }
  return secrets;
}
