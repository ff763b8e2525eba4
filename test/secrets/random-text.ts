// Seeded randomness for the masking tests: the same seed gives the same texts, so a failure can be replayed.

/** A seeded generator of floats in [0, 1) (mulberry32). */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [0, n). */
export function pickIndex(random: () => number, n: number): number {
  return Math.floor(random() * n);
}

/** Random bytes from the generator. */
export function makeRandomBytes(random: () => number, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = pickIndex(random, 256);
  return bytes;
}

/** Cuts text into pieces of 1 to maxLength code points (never inside a surrogate pair, as a StringDecoder never does). */
export function cutAtCodePoints(random: () => number, text: string, maxLength: number): string[] {
  const points = Array.from(text);
  const pieces: string[] = [];
  for (let at = 0; at < points.length;) {
    const take = 1 + pickIndex(random, maxLength);
    pieces.push(points.slice(at, at + take).join(""));
    at += take;
  }
  return pieces;
}

/** The masking rule written as plainly as possible: at each position the longest form starting there, else one character. */
export function maskByReference(text: string, forms: readonly string[], mask = "***"): string {
  let out = "";
  for (let at = 0; at < text.length;) {
    let longest = 0;
    for (const form of forms) if (form.length > longest && text.startsWith(form, at)) longest = form.length;
    if (longest > 0) {
      out += mask;
      at += longest;
    } else {
      out += text[at];
      at += 1;
    }
  }
  return out;
}
