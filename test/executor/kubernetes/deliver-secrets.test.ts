// Tests of the secrets exec through the scripted kubectl: values only on stdin, a receipt that must match, retries.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deliverSecrets } from "../../../src/executor/kubernetes/deliver-secrets.js";
import { isInfraError } from "../../support/infra-error.js";
import { NODE_NAME, POD_NAME, UPGRADE_REFUSED, failure, podList, runningPod } from "./cluster-objects.js";
import { SECRETS, assertNoSecretIn, honestSecretsPod } from "./secrets-fixtures.js";
import { buildTestContext } from "./test-context.js";

const POD = { name: POD_NAME, node: NODE_NAME };
function setUp(): ReturnType<typeof buildTestContext> {
  const test = buildTestContext({ settings: { secrets: SECRETS } });
  test.kubectl.on("get pods", podList(runningPod()));
  return test;
}

describe("deliverSecrets", () => {
  it("carries the values only on the exec's stdin: its argv names no secret and no value", async () => {
    const { ctx, kubectl } = setUp();
    kubectl.on("exec", honestSecretsPod);
    assert.deepEqual(await deliverSecrets(ctx, POD), {
      names: ["API_TOKEN", "PASSWORD"],
      bytes: kubectl.calls[0]!.stdinBytes!.length,
    });
    assert.equal(kubectl.calls.length, 1);
    const call = kubectl.calls[0]!;
    assert.deepEqual(call.command, ["exec", "-i", POD_NAME, "-c", "run", "--", "sh", "/knotless/helper.sh", "secrets"]);
    assertNoSecretIn(call.args, "the argv");
    assert.ok(!call.args.some((arg) => /API_TOKEN|PASSWORD/.test(arg)), "the argv names a secret");
    assert.match(
      call.stdin!,
      /^export API_TOKEN='tok-'\\''quoted'\\'' \$HOME `x`\nsecond line'\nexport PASSWORD='hunter2-é'\n: knotless-secrets [0-9a-f]{16} 2\n$/,
    );
  });

  it("fails as an integrity mismatch, quoting nothing the pod printed, when the stream was cut", async () => {
    const { ctx, kubectl } = setUp();
    kubectl.on("exec", (call) => ({ stdout: `none\n${(call.stdinBytes?.length ?? 0) - 20}\n` }));
    await assert.rejects(deliverSecrets(ctx, POD), (error: unknown) => {
      isInfraError("integrity-mismatch", /^secrets delivery check failed: the pod received \d+ of \d+ bytes$/)(error);
      assertNoSecretIn([(error as Error).message], "the error");
      return true;
    });
  });

  it("refuses a receipt from an earlier attempt: each attempt has its own nonce", async () => {
    const { ctx, kubectl } = setUp();
    kubectl.on("exec", (call) => ({
      stdout: `: knotless-secrets 0000000000000000 2\n${call.stdinBytes?.length ?? 0}\n`,
    }));
    await assert.rejects(
      deliverSecrets(ctx, POD),
      isInfraError("integrity-mismatch", /receipt at the end of the secrets is missing or different/),
    );
  });

  it("sends again, with a fresh receipt, while the node refuses exec upgrades", async () => {
    const { ctx, kubectl } = setUp();
    kubectl.on("exec", [failure(UPGRADE_REFUSED), honestSecretsPod]);
    await deliverSecrets(ctx, POD);
    const receipts = kubectl.calls
      .filter((call) => call.command[0] === "exec")
      .map((call) => call.stdin!.trimEnd().split("\n").at(-1));
    assert.equal(receipts.length, 2);
    assert.notEqual(receipts[0], receipts[1]);
  });

  it("fails as a failed exec when kubectl does, without a word of stdin in the message", async () => {
    const { ctx, kubectl } = setUp();
    kubectl.on("exec", failure("error: Internal error occurred: error executing command in container", 1));
    await assert.rejects(deliverSecrets(ctx, POD), (error: unknown) => {
      isInfraError("exec-failed", /^secrets failed \(kubectl exit 1\)/)(error);
      assertNoSecretIn([(error as Error).message], "the error");
      return true;
    });
  });
});
