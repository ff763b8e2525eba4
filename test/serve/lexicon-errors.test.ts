// Every error name the service can answer is declared: a method's in its lexicon, a stream's in defs.json, the rest XRPC's own.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ANY_CALL_ERRORS, loadLexicons, NSID } from "../../src/serve/lexicon-schemas.js";
import { REPO_ROOT } from "../support/run-cli.js";

const SERVE_SRC = join(REPO_ROOT, "src", "serve");

/** Each `new XrpcError(status, "Name"` in src/serve, and each name mapErrorToHttp gives a thrown class: file and name. */
function readAnsweredErrorNames(): Array<{ file: string; name: string }> {
  const found: Array<{ file: string; name: string }> = [];
  for (const file of readdirSync(SERVE_SRC).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(join(SERVE_SRC, file), "utf8");
    for (const match of text.matchAll(/new XrpcError\(\s*\d{3},\s*"(\w+)"/g)) found.push({ file, name: match[1]! });
    if (file === "http-errors.ts")
      for (const match of text.matchAll(/body: \{ error: "(\w+)"/g)) found.push({ file, name: match[1]! });
  }
  return found;
}

describe("the lexicons' errors", () => {
  it("declare every error name the service's code answers: in a method's lexicon, a stream def, or XRPC's own", async () => {
    const lexicons = await loadLexicons();
    const declared = new Set([
      ...ANY_CALL_ERRORS,
      ...Object.values(NSID).flatMap((nsid) => lexicons.errors(nsid)),
      ...lexicons.streamErrors("streamError"),
      ...lexicons.streamErrors("streamRefused"),
    ]);
    const answered = readAnsweredErrorNames();
    assert.ok(answered.length > 20, `the scan found ${answered.length} answers: has the XrpcError call changed shape?`);
    assert.deepEqual(
      answered.filter(({ name }) => !declared.has(name)),
      [],
      "answered but declared in no lexicon",
    );
  });

  it("declare StateUnwritable for submitRun, and the stream refusals and the stall in defs.json", async () => {
    const lexicons = await loadLexicons();
    assert.ok(lexicons.errors(NSID.submitRun).includes("StateUnwritable"));
    assert.deepEqual(
      ["RunNotFound", "InvalidRequest", "FutureCursor", "EpochMismatch"].filter(
        (name) => !lexicons.streamErrors("streamRefused").includes(name),
      ),
      [],
    );
    assert.deepEqual(lexicons.streamErrors("streamError"), ["FollowerStalled"]);
  });
});
