// Tests which forms of a secret are masked: the value, its lines and its base64 encodings at every alignment.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildSecretForms,
  listBase64Forms,
  MIN_ENCODED_FORM_LENGTH,
  MIN_LINE_LENGTH,
} from "../../src/secrets/secret-forms.js";
import { createRandom, makeRandomBytes } from "./random-text.js";

/** Base64 of `bytes`, in the alphabet of `url`. */
function encode(bytes: Buffer, url: boolean): string {
  const standard = bytes.toString("base64");
  return url ? standard.replace(/\+/g, "-").replace(/\//g, "_") : standard;
}

describe("buildSecretForms", () => {
  it("always lists the plain value, even a one-character one", () => {
    assert.ok(buildSecretForms(["a"]).includes("a"));
    assert.ok(buildSecretForms(["correct horse battery staple"]).includes("correct horse battery staple"));
  });

  it("lists the padded and unpadded base64 of the value's UTF-8 bytes in both alphabets", () => {
    // "~~~???>" encodes with "+" and "/", so the URL-safe forms differ from the standard ones.
    const value = "~~~???>";
    const standard = Buffer.from(value).toString("base64");
    assert.equal(standard, "fn5+Pz8/Pg==");
    const forms = buildSecretForms([value]);
    for (const form of [standard, "fn5+Pz8/Pg", "fn5-Pz8_Pg==", "fn5-Pz8_Pg"]) assert.ok(forms.includes(form), form);
  });

  it("encodes a non-ASCII value as its UTF-8 bytes", () => {
    const value = "pässwörd-ключ";
    assert.ok(buildSecretForms([value]).includes(Buffer.from(value, "utf8").toString("base64")));
  });

  it("lists, at each of the three alignments, the base64 characters the value alone determines inside a longer stream", () => {
    const random = createRandom(7);
    for (const value of ["s3cr3t-v4lue", "ab+/cd?>~~", "ключ-🔑-密码", "1234567"]) {
      const bytes = Buffer.from(value, "utf8");
      const forms = buildSecretForms([value]);
      for (let before = 0; before < 9; before++) {
        for (const url of [false, true]) {
          // Two streams that differ everywhere except in the value: the characters they share there are the form.
          const a = encode(Buffer.concat([makeRandomBytes(random, before), bytes, makeRandomBytes(random, 5)]), url);
          const b = encode(Buffer.concat([Buffer.alloc(before, 0xff), bytes, Buffer.alloc(5, 0xff)]), url);
          const first = Math.ceil((before * 8) / 6);
          const end = Math.floor(((before + bytes.length) * 8) / 6);
          const inner = a.slice(first, end);
          assert.equal(b.slice(first, end), inner, "the value alone determines these characters");
          assert.ok(
            forms.includes(inner),
            `${value} preceded by ${before} bytes (${url ? "URL-safe" : "standard"}): ${inner}`,
          );
        }
      }
    }
  });

  it(`leaves out encoded forms shorter than ${MIN_ENCODED_FORM_LENGTH} characters, so a short secret does not mask every short run of letters`, () => {
    const forms = buildSecretForms(["a"]);
    assert.deepEqual(forms.sort(), ["YQ==", "a"].sort());
    for (const value of ["a", "ab", "abc", "abcd"]) {
      for (const form of buildSecretForms([value]))
        if (form !== value) assert.ok(form.length >= MIN_ENCODED_FORM_LENGTH, `${value}: ${form}`);
    }
    assert.ok(listBase64Forms(Buffer.from("ab")).includes("YW"), "the short form exists before the filter");
  });

  it(`masks each line of a multi-line value (without its \\r) when it has at least ${MIN_LINE_LENGTH} characters, and the whole value`, () => {
    const value = '{\r\n  "private_key": "MIIEvQIBADANBgkq",\r\n  },\r\n}';
    const forms = buildSecretForms([value]);
    assert.ok(forms.includes(value));
    assert.ok(forms.includes('  "private_key": "MIIEvQIBADANBgkq",'));
    for (const short of ["{", "  },", "}", ""]) assert.ok(!forms.includes(short), JSON.stringify(short));
    assert.ok(!forms.some((form) => form.includes("\r") && form !== value), "no line keeps its \\r");
  });

  it("masks the value without its trailing line break, as tools print it", () => {
    assert.ok(buildSecretForms(["hunter2\n"]).includes("hunter2"));
  });

  it("replaces a lone surrogate with U+FFFD, as the UTF-8 decoder does in the output", () => {
    const forms = buildSecretForms(["ab\uD83Dcd"]);
    assert.ok(forms.includes("ab\uFFFDcd"));
    assert.ok(!forms.some((form) => /[\uD800-\uDFFF]/.test(form)));
  });

  it("lists each form once, longest first, and ignores empty values", () => {
    const forms = buildSecretForms(["same-secret", "same-secret", ""]);
    assert.equal(new Set(forms).size, forms.length);
    for (let i = 1; i < forms.length; i++) assert.ok(forms[i - 1]!.length >= forms[i]!.length);
    assert.deepEqual(buildSecretForms([""]), []);
  });
});
