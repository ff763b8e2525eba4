// Tests the streaming secret mask: split writes, every base64 alignment, multi-line values, UTF-8, the hold-back.
import assert from "node:assert/strict";
import { StringDecoder } from "node:string_decoder";
import { describe, it } from "node:test";
import { MASK, SecretMasker } from "../../src/secrets/mask-stream.js";
import { buildSecretForms } from "../../src/secrets/secret-forms.js";
import { createRandom, cutAtCodePoints, makeRandomBytes, maskByReference, pickIndex } from "./random-text.js";

/** Writes the pieces to a new stream of the masker, checking the hold-back after each, and ends it. */
function maskPieces(masker: SecretMasker, pieces: readonly string[]): string {
  const stream = masker.createStream();
  let out = "";
  for (const piece of pieces) {
    out += stream.write(piece);
    assert.ok(
      stream.heldLength <= masker.longestFormLength - 1,
      `held ${stream.heldLength} > longest form ${masker.longestFormLength} - 1`,
    );
  }
  return out + stream.end();
}

/** Feeds UTF-8 bytes through a StringDecoder into a mask stream, cut into pieces of `size` bytes. */
function maskBytes(masker: SecretMasker, bytes: Buffer, size: number): string {
  const decoder = new StringDecoder("utf8");
  const stream = masker.createStream();
  let out = "";
  for (let at = 0; at < bytes.length; at += size) out += stream.write(decoder.write(bytes.subarray(at, at + size)));
  return out + stream.write(decoder.end()) + stream.end();
}

const SECRETS = ["ghp_R2d2C3poBb8Luke0Leia9Han", "pässwörd-ключ-密码", "hunter22", "🔑astral-secret🔑"];

describe("SecretMasker", () => {
  const masker = new SecretMasker(SECRETS);

  it("replaces every occurrence of a secret with ***", () => {
    const text = "token=ghp_R2d2C3poBb8Luke0Leia9Han and again ghp_R2d2C3poBb8Luke0Leia9Han, pw hunter22.\n";
    assert.equal(masker.maskText(text), "token=*** and again ***, pw ***.\n");
  });

  it("catches a secret written one character at a time, and the output equals masking the whole text", () => {
    const text =
      "start ghp_R2d2C3poBb8Luke0Leia9Han mid hunter22hunter22 ünïcødé pässwörd-ключ-密码 🔑astral-secret🔑 end 😀\n";
    const whole = masker.maskText(text);
    assert.equal(whole, "start *** mid ****** ünïcødé *** *** end 😀\n");
    assert.equal(maskPieces(masker, Array.from(text)), whole);
  });

  it("catches a secret split between writes however the UTF-8 bytes are cut, without corrupting any character", () => {
    const text = "ключ: pässwörd-ключ-密码 → 🔑astral-secret🔑 ✓ 密码 😀 hunter2 (not a secret)\n";
    const expected = "ключ: *** → *** ✓ 密码 😀 hunter2 (not a secret)\n";
    const bytes = Buffer.from(text, "utf8");
    for (let size = 1; size <= bytes.length; size++)
      assert.equal(maskBytes(masker, bytes, size), expected, `${size}-byte pieces`);
  });

  it("masks every base64 form of a secret at every alignment inside longer base64 data, leaving the other characters", () => {
    const random = createRandom(13);
    for (const value of SECRETS) {
      const single = new SecretMasker([value]);
      const forms = buildSecretForms([value]);
      const bytes = Buffer.from(value, "utf8");
      for (let before = 1; before <= 9; before++) {
        for (const url of [false, true]) {
          const data = Buffer.concat([
            makeRandomBytes(random, before),
            bytes,
            makeRandomBytes(random, 4 + pickIndex(random, 8)),
          ]);
          const standard = data.toString("base64");
          const encoded = url ? standard.replace(/\+/g, "-").replace(/\//g, "_") : standard;
          const first = Math.ceil((before * 8) / 6);
          const end = Math.floor(((before + bytes.length) * 8) / 6);
          // At alignment 0 the whole unpadded form may match one character more, when the bits after the value
          // happen to be the zeros its last character ends with: the longest match wins.
          const longer = forms.includes(encoded.slice(first, end + 1)) ? 1 : 0;
          const expected = `${encoded.slice(0, first)}${MASK}${encoded.slice(end + longer)}`;
          const label = `${value} after ${before} bytes, ${url ? "URL-safe" : "standard"}`;
          assert.equal(single.maskText(encoded), expected, label);
          assert.equal(maskPieces(single, Array.from(encoded)), expected, `${label}, written one character at a time`);
        }
      }
    }
  });

  it("masks the whole base64 of a secret, padded or not, in both alphabets", () => {
    const value = "~~~???>secret";
    const standard = Buffer.from(value).toString("base64");
    const url = Buffer.from(value).toString("base64url");
    const one = new SecretMasker([value]);
    for (const form of [standard, standard.replace(/=+$/, ""), url, `${url}==`])
      assert.equal(one.maskText(`x ${form} y`), "x *** y", form);
    assert.notEqual(standard.replace(/=+$/, ""), standard, "the value's base64 is padded");
    assert.notEqual(url, standard.replace(/=+$/, ""), "the value's URL-safe base64 differs");
  });

  it("masks a multi-line value as a whole and line by line, but leaves its short lines alone", () => {
    const key = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQDZ\n}\n-----END KEY-----";
    const one = new SecretMasker([key]);
    assert.equal(one.maskText(`key:\n${key}\nok\n`), "key:\n***\nok\n");
    const printed = "[1] MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r\n[2] BKcwggSjAgEAAoIBAQDZ\r\n[3] }\r\n";
    assert.equal(one.maskText(printed), "[1] ***\r\n[2] ***\r\n[3] }\r\n");
  });

  it("releases text that only starts like a secret once more output decides it, or when the stream ends", () => {
    const stream = masker.createStream();
    assert.equal(stream.write("log: ghp_R2d2C3po"), "log: ");
    assert.equal(stream.heldLength, "ghp_R2d2C3po".length);
    assert.equal(stream.write("Bb8 is not it\n"), "ghp_R2d2C3poBb8 is not it\n");
    assert.equal(stream.heldLength, 0);
    assert.equal(stream.write("then hunter2"), "then ");
    assert.equal(stream.end(), "hunter2");
  });

  it("holds back nothing after text that cannot start a secret", () => {
    const stream = masker.createStream();
    assert.equal(stream.write("nothing secret here.\n"), "nothing secret here.\n");
    assert.equal(stream.heldLength, 0);
  });

  it("holds back at most the longest form minus one character", () => {
    const longest = buildSecretForms(SECRETS)[0]!;
    assert.equal(longest.length, masker.longestFormLength);
    const stream = masker.createStream();
    assert.equal(stream.write(`x ${longest.slice(0, -1)}`), "x ");
    assert.equal(stream.heldLength, longest.length - 1);
    assert.equal(stream.write(longest.slice(-1)), MASK);
  });

  it("takes the longest of overlapping secrets at the leftmost position, and masks adjacent ones each", () => {
    const overlapping = new SecretMasker(["abcdef", "cdefghij", "abcdefgh"]);
    assert.equal(overlapping.maskText("xabcdefghijy"), "x***ijy");
    assert.equal(overlapping.maskText("xxcdefghijabcdefabcdef"), "xx*********");
    assert.equal(overlapping.maskText("abcde fgh cdefghi"), "abcde fgh cdefghi");
    const stream = overlapping.createStream();
    assert.equal(stream.write("abcdef"), "", "a longer secret could still follow");
    assert.equal(stream.write("g!"), "***g!");
  });

  it("masks a secret shorter than the skip search needs at every position", () => {
    const short = new SecretMasker(["ab"]);
    const text = "abcabxab a b aab";
    assert.equal(short.maskText(text), "***c***x*** a b a***");
    assert.equal(maskPieces(short, Array.from(text)), "***c***x*** a b a***");
  });

  it("catches a secret cut at any point between two 64 KiB writes", () => {
    const filler = "lorem ipsum 😀 ".repeat(4700);
    for (const secret of SECRETS) {
      for (let cut = 1; cut < secret.length; cut++) {
        if (/[\uD800-\uDBFF]/.test(secret.charAt(cut - 1))) continue; // a StringDecoder never cuts there
        const out = maskPieces(masker, [`${filler}${secret.slice(0, cut)}`, `${secret.slice(cut)}${filler}`]);
        assert.equal(out, `${filler}${MASK}${filler}`, `${secret} cut after ${cut}`);
      }
    }
  });

  it("catches secrets across 64 KiB writes", () => {
    const random = createRandom(5);
    const forms = buildSecretForms(SECRETS);
    let text = "";
    while (text.length < 300_000)
      text +=
        random() < 0.01
          ? forms[pickIndex(random, forms.length)]!
          : "lorem ipsum dolor ghp_ hunt pässw 🔑a\n".slice(pickIndex(random, 20));
    const chunks: string[] = [];
    for (let at = 0; at < text.length;) {
      let end = Math.min(text.length, at + 65536 - pickIndex(random, 64));
      if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1; // cut where a StringDecoder could
      chunks.push(text.slice(at, end));
      at = end;
    }
    const expected = maskByReference(text, forms);
    assert.ok(expected.includes(MASK));
    assert.equal(maskPieces(masker, chunks), expected);
  });

  it("gives on random chunkings the result of masking the whole text at once, and that is the plain masking rule", () => {
    const secrets = ["ghp_R2d2C3poBb8Luke0Leia9Han", "ключ-密码-🔑x", "abcabcabd", "abcab", "\u00e9t\u00e9 2024!"];
    // With "xa" the shortest form is too short for the skip search: every position is walked.
    for (const set of [secrets, [...secrets, "xa"]]) {
      const many = new SecretMasker(set);
      const forms = buildSecretForms(set);
      const pieces = [
        ...forms,
        ...forms.map((form) => form.slice(0, 1 + (form.length >> 1))),
        "a",
        "b",
        "c",
        "é",
        "😀",
        " ",
        "\n",
        "x",
        "Zm9v",
        "==",
      ];
      for (let seed = 1; seed <= 300; seed++) {
        const random = createRandom(seed);
        let text = "";
        const parts = 1 + pickIndex(random, 40);
        for (let i = 0; i < parts; i++) text += pieces[pickIndex(random, pieces.length)];
        const whole = many.maskText(text);
        assert.equal(whole, maskByReference(text, forms), `seed ${seed}: maskText against the reference`);
        assert.equal(
          maskPieces(many, cutAtCodePoints(random, text, 1 + pickIndex(random, 12))),
          whole,
          `seed ${seed}: streamed`,
        );
      }
    }
  });

  it("passes everything through untouched when there are no secrets", () => {
    const none = new SecretMasker([]);
    assert.equal(none.isEmpty, true);
    assert.equal(new SecretMasker([""]).isEmpty, true);
    assert.equal(masker.isEmpty, false);
    const stream = none.createStream();
    assert.equal(stream.write("anything at all"), "anything at all");
    assert.equal(stream.end(), "");
  });

  it("refuses a write after the end", () => {
    const stream = masker.createStream();
    stream.end();
    assert.throws(() => stream.write("x"), /after end/);
  });
});
