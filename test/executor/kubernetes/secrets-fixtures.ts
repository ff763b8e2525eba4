// Secrets for executor tests, a scripted pod that takes them, and a check that none leaked into some text.
import assert from "node:assert/strict";
import type { RecordedCall, ScriptedReply } from "../../support/scripted-kubectl.js";

export const SECRETS = [
  { name: "API_TOKEN", value: "tok-'quoted' $HOME `x`\nsecond line" },
  { name: "PASSWORD", value: "hunter2-é" },
];

/** A pod that took the secrets: it prints the receipt line it found at the end of stdin, then the bytes it got. */
export function honestSecretsPod(call: RecordedCall): ScriptedReply {
  const bytes = call.stdinBytes ?? Buffer.alloc(0);
  const text = bytes.toString("utf8");
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : ["none"];
  const last = lines.at(-1)!;
  return { stdout: `${last.startsWith(": knotless-secrets ") ? last : "none"}\n${bytes.length}\n` };
}

/** Every value of SECRETS, and each of its lines, appears in none of these strings. */
export function assertNoSecretIn(texts: readonly string[], what: string): void {
  for (const { value } of SECRETS) {
    for (const piece of [value, ...value.split("\n")]) {
      for (const text of texts) assert.ok(!text.includes(piece), `${what} holds a secret: ${text}`);
    }
  }
}
