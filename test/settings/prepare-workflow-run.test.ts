// The library's path for a workflow the daemon holds as text: parse with positions, plan for a trigger with the
// checkout's hashes, run with typed secrets that never reach an event unmasked. Through src/index.ts, as the daemon imports it.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  loadWorkflowText,
  prepareWorkflowRun,
  runWorkflow,
  WorkflowError,
  type RunEvent,
  type RunSettings,
} from "../../src/index.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import { exampleSettings } from "../support/example-settings.js";
import { STEP_SUCCEEDED, ScriptedExecutor } from "../support/scripted-executor.js";

const WORKFLOW = `when:
  - event: push
    branch: main
caches:
  - key: 'deps-{{ hashFiles "lock.txt" }}'
    paths: [deps]
environment:
  LEVEL: 1
steps:
  - name: build
    command: echo "$API_TOKEN"
`;

describe("the library's workflow path", () => {
  let root = "";
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "knotless-library-workflow-"));
    await mkdir(join(root, "checkout"));
    await writeFile(join(root, "checkout", "lock.txt"), "v1\n");
  });
  after(() => rm(root, { recursive: true, force: true }));

  it("refuses workflow text with every problem at the name it was given, line and column", async () => {
    await assert.rejects(
      loadWorkflowText("steps:\n  - name: a\n    comand: x\n", ".tangled/workflows/ci.yml"),
      (error: unknown) => {
        assert.ok(error instanceof WorkflowError);
        assert.match(
          error.message,
          /^\.tangled\/workflows\/ci\.yml:2:5: steps\[0\]: expected the key `command`, found none$/m,
        );
        assert.match(
          error.message,
          /^\.tangled\/workflows\/ci\.yml:3:5: steps\[0\]\.comand: unknown key; did you mean `command`\?$/m,
        );
        return true;
      },
    );
  });

  it("plans a push to main with the cache key from the checkout's lock file, and a push elsewhere as not matched", async () => {
    const loaded = await loadWorkflowText(WORKFLOW, "ci.yml");
    const push = { event: "push", ref: "refs/heads/main" } as const;
    const { plan } = await prepareWorkflowRun(loaded, {
      runId: "r1",
      trigger: push,
      checkoutDir: join(root, "checkout"),
    });
    assert.ok(plan.matched);
    assert.match(plan.caches[0]!.key, /^deps-[0-9a-f]{64}$/);
    assert.deepEqual(plan.caches[0]!.paths, ["/work/deps"]);
    assert.ok(plan.env.some((v) => v.name === "LEVEL" && v.value === "1"));
    await writeFile(join(root, "checkout", "lock.txt"), "v2\n");
    const changed = await prepareWorkflowRun(loaded, {
      runId: "r2",
      trigger: push,
      checkoutDir: join(root, "checkout"),
    });
    assert.ok(changed.plan.matched);
    assert.notEqual(changed.plan.caches[0]!.key, plan.caches[0]!.key, "the key follows the lock file");
    const elsewhere = await prepareWorkflowRun(loaded, {
      runId: "r3",
      trigger: { event: "push", ref: "refs/heads/dev" },
      checkoutDir: join(root, "checkout"),
    });
    assert.equal(elsewhere.plan.matched, false);
  });

  it("runs the plan with secrets given as values, and masks them in every event the sinks get", async () => {
    const loaded = await loadWorkflowText(WORKFLOW, "ci.yml");
    const { plan } = await prepareWorkflowRun(loaded, { runId: "r4", cachesOff: true });
    assert.ok(plan.matched);
    const secret = "tok-3f9a1c77e2";
    const settings: RunSettings = {
      ...exampleSettings({ steps: [] }),
      checkoutDir: join(root, "checkout"),
      outDir: join(root, "out"),
      steps: plan.steps,
      env: plan.env,
      image: plan.image,
      secrets: [{ name: "API_TOKEN", value: secret }],
    };
    const events: RunEvent[] = [];
    const result = await runWorkflow({
      settings,
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent/kubectl" }), settings.target),
      signal: new AbortController().signal,
      sinks: [(event) => events.push(event)],
      createExecutor: (ctx) =>
        new ScriptedExecutor(ctx, {
          runStep: async (index) => {
            ctx.emit({ kind: "step-output", index, stream: "stdout", text: `token is ${secret}\n` });
            return STEP_SUCCEEDED;
          },
        }),
    });
    assert.equal(result.status, "success", JSON.stringify(result.error));
    assert.deepEqual(
      result.steps.map((s) => s.name),
      ["build"],
    );
    const said = JSON.stringify(events);
    assert.match(said, /token is \*\*\*/);
    assert.ok(!said.includes(secret), "no event holds the secret");
    assert.ok(!JSON.stringify(result).includes(secret), "nor does the result");
  });
});
