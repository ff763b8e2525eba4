// The Job's ownership annotations: the owning instance, and a continuation that holds the plan and never a secret.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { gunzipSync } from "node:zlib";
import {
  buildOwnershipAnnotations,
  decodeContinuation,
  MAX_CONTINUATION_BYTES,
} from "../../src/serve/run-ownership.js";
import { exampleSettings } from "../support/example-settings.js";

const SECRET = "s3cr3t-value-never-in-the-cluster";

describe("the ownership annotations", () => {
  const settings = { ...exampleSettings({ steps: ["build", "test"] }), secrets: [{ name: "TOKEN", value: SECRET }] };

  it("name the owning instance and carry a continuation that reads back to the run's plan", () => {
    const { annotations, tooLarge } = buildOwnershipAnnotations("a", settings, { repo: "did:x/repo", workflow: "ci" });
    assert.equal(tooLarge, undefined);
    assert.equal(annotations["knotless.dev/instance"], "a");
    const continuation = decodeContinuation(annotations["knotless.dev/continuation"]!);
    assert.equal(continuation.plan.settings.jobName, "knotless-run-42");
    assert.deepEqual(
      continuation.plan.settings.steps.map((s) => s.name),
      ["build", "test"],
    );
    assert.deepEqual(continuation.plan.secretNames, ["TOKEN"]);
    assert.equal(continuation.repo, "did:x/repo");
    assert.equal(continuation.workflow, "ci");
  });

  it("never hold a secret's value, compressed or not", () => {
    const { annotations } = buildOwnershipAnnotations("a", settings, { repo: null, workflow: null });
    const value = annotations["knotless.dev/continuation"]!;
    assert.ok(!value.includes(SECRET));
    assert.ok(!gunzipSync(Buffer.from(value, "base64")).toString("utf8").includes(SECRET));
  });

  it("leave the continuation out, saying why, when it would not fit in an annotation", () => {
    // Random scripts do not compress: a plan past the limit even gzipped.
    const big = Array.from({ length: 40 }, (_, i) => ({
      name: `s${i}`,
      script: Buffer.from(Array.from({ length: 6000 }, () => Math.floor(Math.random() * 256))).toString("base64"),
      source: `steps:${i}`,
    }));
    const { annotations, tooLarge } = buildOwnershipAnnotations(
      "a",
      { ...settings, steps: big },
      {
        repo: null,
        workflow: null,
      },
    );
    assert.deepEqual(Object.keys(annotations), ["knotless.dev/instance"]);
    assert.match(
      tooLarge ?? "",
      new RegExp(`more than the ${MAX_CONTINUATION_BYTES / 1024} KiB .* no other instance can adopt it`),
    );
  });

  it("refuse a continuation that is not one, with an InputError", () => {
    assert.throws(() => decodeContinuation("bm90IGd6aXA="), /continuation annotation cannot be read/);
  });
});
