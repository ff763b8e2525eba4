// Tests of the secrets exec's stdin and of the reply that proves it arrived whole.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildSecretsPayload, checkSecretsReply, parseSecretsFile } from "../../src/pod/secrets-payload.js";

const secrets = [
  { name: "TOKEN", value: "it's\n$ecret" },
  { name: "EMPTY", value: "" },
];

describe("buildSecretsPayload", () => {
  it("writes one export line per secret, then the receipt as a shell no-op line", () => {
    const payload = buildSecretsPayload(secrets, "00ff00ff00ff00ff");
    assert.equal(
      payload.text,
      "export TOKEN='it'\\''s\n$ecret'\nexport EMPTY=''\n: knotless-secrets 00ff00ff00ff00ff 2\n",
    );
    assert.equal(payload.receipt, ": knotless-secrets 00ff00ff00ff00ff 2");
    assert.equal(payload.bytes, Buffer.byteLength(payload.text));
  });

  it("counts the bytes in UTF-8", () => {
    assert.equal(
      buildSecretsPayload([{ name: "U", value: "é🚀" }], "n").bytes,
      Buffer.byteLength("export U='é🚀'\n: knotless-secrets n 1\n"),
    );
  });
});

describe("checkSecretsReply", () => {
  const payload = buildSecretsPayload(secrets, "00ff00ff00ff00ff");

  it("accepts the pod's reply when it found this receipt and every byte", () => {
    assert.equal(checkSecretsReply(payload, `${payload.receipt}\n${payload.bytes}\n`), undefined);
  });

  it("refuses a short count, a missing or older receipt, and a reply that is neither", () => {
    assert.equal(
      checkSecretsReply(payload, `none\n${payload.bytes - 5}\n`),
      `the pod received ${payload.bytes - 5} of ${payload.bytes} bytes`,
    );
    assert.equal(
      checkSecretsReply(payload, `none\n${payload.bytes}\n`),
      "the receipt at the end of the secrets is missing or different",
    );
    assert.equal(
      checkSecretsReply(payload, `: knotless-secrets 1111111111111111 2\n${payload.bytes}\n`),
      "the receipt at the end of the secrets is missing or different",
    );
    assert.equal(checkSecretsReply(payload, ""), "the pod's reply is not a receipt and a byte count");
    assert.equal(checkSecretsReply(payload, `${payload.receipt}\n`), "the pod did not say how many bytes it received");
  });

  it("never repeats what the pod printed in its verdict", () => {
    const verdict = checkSecretsReply(payload, `export TOKEN='it'\\''s\n12\n`);
    assert.ok(verdict !== undefined && !verdict.includes("TOKEN") && !verdict.includes("export"), verdict);
  });
});

describe("parseSecretsFile", () => {
  it("reads back every value byte for byte from the file the secrets payload installs", () => {
    const secrets = [
      { name: "A", value: "plain" },
      { name: "B_2", value: 'it\'s "quoted"\nover lines $HOME `x` \\ ü' },
      { name: "C", value: "'" },
    ];
    assert.deepEqual(parseSecretsFile(buildSecretsPayload(secrets, "nonce").text), secrets);
  });

  it("gives undefined for text that is not such a file", () => {
    assert.equal(parseSecretsFile("export A='unterminated\n"), undefined);
    assert.equal(parseSecretsFile("rm -rf /\n"), undefined);
  });
});
