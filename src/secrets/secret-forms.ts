// Every form in which a secret value can leak into step output: the value, its lines and its base64 encodings.

/**
 * Shortest encoded form masked. A base64 form shorter than this is dropped, so that a short secret cannot mask
 * every short run of letters in the output: "a" encodes as `YQ`, and masking every `YQ` would corrupt any base64
 * data a step prints. At 4 characters a random match in base64 data is about one in 64^4 = 16.7 million positions.
 * The price: the base64 of a secret of 1 to 3 bytes is caught only where its forms reach 4 characters (its padded
 * form always does, the aligned ones inside a longer stream may not). The plain value is always masked.
 */
export const MIN_ENCODED_FORM_LENGTH = 4;

/**
 * Shortest line of a multi-line value masked on its own. Multi-line values (PEM keys, JSON credentials) have short
 * lines such as `{`, `}` or `  },` that carry nothing secret but occur everywhere in output; masking them would
 * corrupt it. The long lines (a PEM key's 64-character base64 lines) are the secret material that tools print line
 * by line. The whole value is still masked, whatever the length of its lines.
 */
export const MIN_LINE_LENGTH = 8;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Returns every distinct form to mask for the given secret values, longest first:
 * - the value itself, always, and the value without its trailing line breaks;
 * - each line of a multi-line value (without its `\r`) of at least MIN_LINE_LENGTH characters;
 * - the base64 of the value's UTF-8 bytes, standard and URL-safe alphabets, padded and unpadded;
 * - the base64 characters fully determined by the value's bytes when it sits inside a longer base64 stream, at
 *   each of the three alignments (0, 1 or 2 bytes before it), in both alphabets.
 * Encoded forms shorter than MIN_ENCODED_FORM_LENGTH are left out. Empty values are ignored (the input side refuses
 * them). A lone surrogate in a value is replaced with U+FFFD, as the UTF-8 decoder does in the output it masks, so
 * that a form can never match half of a character.
 */
export function buildSecretForms(values: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const raw of values) {
    const value = raw.replace(LONE_SURROGATE, "\uFFFD");
    if (value === "") continue;
    forms.add(value);
    const trimmed = value.replace(/[\r\n]+$/, "");
    if (trimmed !== "") forms.add(trimmed);
    for (const line of listLongLines(value)) forms.add(line);
    for (const form of listBase64Forms(Buffer.from(value, "utf8")))
      if (form.length >= MIN_ENCODED_FORM_LENGTH) forms.add(form);
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Returns the lines of a multi-line value (trailing `\r` removed) that are long enough to mask on their own. */
function listLongLines(value: string): string[] {
  if (!value.includes("\n")) return [];
  return value
    .split("\n")
    .map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line))
    .filter((line) => line.length >= MIN_LINE_LENGTH);
}

/**
 * Returns the base64 forms of `bytes`, in both alphabets: the whole encoding padded and unpadded, and the inner
 * form at each alignment. Preceded by k bytes (k = 0, 1, 2), the value's bits start at bit 8k of the stream, and
 * base64 character i (bits 6i to 6i+5) depends on the value alone when 8k <= 6i and 6i + 6 <= 8(k + n).
 */
export function listBase64Forms(bytes: Buffer): string[] {
  const standard = [bytes.toString("base64")];
  standard.push(standard[0]!.replace(/=+$/, ""));
  for (const k of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
    standard.push(encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6)));
  }
  const forms = new Set<string>();
  for (const form of standard) {
    forms.add(form);
    forms.add(form.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  forms.delete("");
  return [...forms];
}
