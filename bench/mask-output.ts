// Generates the masking benchmark's input: 20 secrets and a deterministic pool of step-like output, cut in 64 KiB reads.
import { StringDecoder } from "node:string_decoder";
import { buildSecretForms } from "../src/secrets/secret-forms.js";
import { createRandom, makeRandomBytes, pickIndex } from "../test/secrets/random-text.js";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const WORDS =
  "the build compiling module test passed failed warning error info debug fetch resolved added removed cache hit miss linking object file target release install package version dependency checking".split(
    " ",
  );
export const READ_BYTES = 64 * 1024;

/** A pool of output, repeated as often as needed: it starts and ends on a line boundary. */
export interface OutputPool {
  /** The pool as UTF-8, and cut into 64 KiB reads (a read may end inside a character). */
  readonly bytes: Buffer;
  readonly reads: readonly Buffer[];
  /** The reads as one StringDecoder gives them: what the masker is handed. */
  readonly texts: readonly string[];
  /** Lines that carry one secret form (the pool's expected count of masks). */
  readonly secretLines: number;
  readonly lines: number;
}

function pickFrom(random: () => number, alphabet: string, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[pickIndex(random, alphabet.length)];
  return out;
}

/** 20 secrets of the shapes CI secrets have: tokens with prefixes, keys, passwords with symbols, non-ASCII, JWTs. */
export function makeBenchSecrets(): string[] {
  const random = createRandom(2026);
  const secrets: string[] = [];
  for (let i = 0; i < 4; i++) secrets.push(`ghp_${pickFrom(random, ALNUM, 36)}`);
  for (let i = 0; i < 4; i++) secrets.push(pickFrom(random, `${ALNUM}+/`, 40));
  for (let i = 0; i < 4; i++) secrets.push(pickFrom(random, `${ALNUM}!@#$%^&*()-_=+[]{}`, 24));
  for (let i = 0; i < 4; i++) secrets.push(`sk-${pickFrom(random, ALNUM, 48)}`);
  for (let i = 0; i < 2; i++) secrets.push(`${pickFrom(random, ALNUM, 20)}é-ключ${pickFrom(random, ALNUM, 6)}`);
  for (let i = 0; i < 2; i++)
    secrets.push(`eyJ${pickFrom(random, `${ALNUM}-_`, 60)}.${pickFrom(random, `${ALNUM}-_`, 40)}`);
  return secrets;
}

/** One line of build output; about one in 200 carries a secret in one of its forms, or inside a longer base64 blob. */
function makeLine(
  random: () => number,
  n: number,
  forms: readonly string[],
  secrets: readonly string[],
): { line: string; secret: boolean } {
  if (n % 200 === 117) {
    if (random() < 0.5)
      return { line: `  export TOKEN=${forms[pickIndex(random, forms.length)]} # from the vault`, secret: true };
    const value = Buffer.from(secrets[pickIndex(random, secrets.length)]!, "utf8");
    const blob = Buffer.concat([
      makeRandomBytes(random, 3 + pickIndex(random, 9)),
      value,
      makeRandomBytes(random, 3 + pickIndex(random, 9)),
    ]);
    return { line: `auth: ${blob.toString("base64")}`, secret: true };
  }
  const r = random();
  const time = `2026-11-30T10:${String(n % 60).padStart(2, "0")}:${String((n * 7) % 60).padStart(2, "0")}.${String(n % 1000).padStart(3, "0")}Z`;
  if (r < 0.55) {
    const words = Array.from({ length: 3 + pickIndex(random, 12) }, () => WORDS[pickIndex(random, WORDS.length)]);
    return {
      line: `${time} INFO [${WORDS[n % WORDS.length]}] ${words.join(" ")} (${pickIndex(random, 5000)} ms)`,
      secret: false,
    };
  }
  if (r < 0.67)
    return {
      line: `npm http fetch GET 200 https://registry.npmjs.org/${pickFrom(random, "abcdefghij", 6)}/-/pkg-1.${n % 40}.${n % 7}.tgz ${pickIndex(random, 900)}ms`,
      secret: false,
    };
  if (r < 0.79)
    return {
      line: `  compiling src/${pickFrom(random, "abcdefgh", 5)}/${pickFrom(random, "ijklmnop", 7)}.ts`,
      secret: false,
    };
  if (r < 0.85) return { line: `sha256:${pickFrom(random, "0123456789abcdef", 64)}`, secret: false };
  if (r < 0.88) return { line: makeRandomBytes(random, 57).toString("base64"), secret: false };
  if (r < 0.94) return { line: `✓ ${n} tests pass — naïve café 测试 ${pickFrom(random, ALNUM, 8)}`, secret: false };
  return { line: r < 0.97 ? "" : "ok", secret: false };
}

/** A pool of about `poolBytes` of output for these secrets. */
export function makeOutputPool(secrets: readonly string[], poolBytes: number): OutputPool {
  const random = createRandom(30);
  const forms = buildSecretForms(secrets);
  const lines: string[] = [];
  let size = 0;
  let secretLines = 0;
  while (size < poolBytes) {
    const { line, secret } = makeLine(random, lines.length, forms, secrets);
    if (secret) secretLines += 1;
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  const bytes = Buffer.from(`${lines.join("\n")}\n`, "utf8");
  const reads: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += READ_BYTES) reads.push(bytes.subarray(at, at + READ_BYTES));
  const decoder = new StringDecoder("utf8");
  const texts = reads.map((read) => decoder.write(read));
  return { bytes, reads, texts, secretLines, lines: lines.length };
}
