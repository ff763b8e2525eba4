import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderDryRun } from "../../src/cli/dry-run.js";
import { formatDescribedCalls } from "../../src/cluster/transports/format-calls.js";
import { resolveRunCommand } from "../../src/cli/resolve-run-command.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const CALL = {
  args: ["--namespace", "ci", "get", "pods"],
  api: [{ method: "GET" as const, path: "/api/v1/namespaces/ci/pods" }],
  note: "polled",
};

describe("the dry run's calls", () => {
  it("prints the kubectl command plainly with the API request beside it for --transport kubectl", () => {
    assert.deepEqual(formatDescribedCalls("kubectl", [CALL], "kubectl").slice(1), [
      "# polled",
      "kubectl --namespace ci get pods",
      "#   api: GET /api/v1/namespaces/ci/pods",
    ]);
  });

  it("prints the API request plainly with the kubectl command beside it for --transport api", () => {
    const lines = formatDescribedCalls("kubectl", [CALL], "api");
    assert.match(lines[0]!, /^# API requests, in order \(--transport api\)/);
    assert.deepEqual(lines.slice(1), [
      "# polled",
      "GET /api/v1/namespaces/ci/pods",
      "#   kubectl: kubectl --namespace ci get pods",
    ]);
  });

  it("keeps every line of a multi-line kubectl command inside the comment", () => {
    const lines = formatDescribedCalls("kubectl", [{ ...CALL, args: ["exec", "p", "--", "sh", "-c", "a\nb"] }], "api");
    assert.deepEqual(lines.slice(-2), ["#   kubectl: kubectl exec p -- sh -c 'a", "#   b'"]);
  });

  it("prints a whole run's API requests for --transport api, every one of them without the secret's value", async () => {
    const dir = makeTestTempDir("dry-run-");
    mkdirSync(join(dir, "checkout"));
    writeFileSync(join(dir, "steps.tsv"), "build\tmake\n");
    writeFileSync(join(dir, "secrets.env"), "TOKEN=very-secret-value\n");
    const base = {
      checkout: join(dir, "checkout"),
      steps: join(dir, "steps.tsv"),
      out: join(dir, "out"),
      namespace: "ci",
      dryRun: true,
      runId: "dry-7",
      secrets: join(dir, "secrets.env"),
    };
    const api = await renderDryRun(await resolveRunCommand({ ...base, transport: "api" }, {}));
    const calls = api.slice(api.indexOf("# API requests"));
    assert.match(
      calls,
      /^POST \/apis\/batch\/v1\/namespaces\/ci\/jobs\?fieldValidation=Strict \(body: Job \(the manifest above\)\)\n# {3}kubectl: kubectl --namespace ci create /m,
    );
    assert.match(
      calls,
      /^GET \/api\/v1\/namespaces\/ci\/pods\/<pod>\/exec\?command=sh&command=%2Fknotless%2Fhelper\.sh&command=run&command=0&/m,
    );
    assert.match(calls, /^DELETE \/apis\/batch\/v1\/namespaces\/ci\/jobs\/knotless-run-dry-7 /m);
    assert.doesNotMatch(api, /very-secret-value/);
    const kubectl = await renderDryRun(await resolveRunCommand({ ...base, transport: "kubectl" }, {}));
    assert.match(
      kubectl,
      /^kubectl --namespace ci create --request-timeout 30s -f - -o json\n# {3}api: POST \/apis\/batch\/v1\/namespaces\/ci\/jobs\?fieldValidation=Strict /m,
    );
    assert.doesNotMatch(kubectl, /very-secret-value/);
  });

  it("prints the run's PodDisruptionBudget create after the Job's and its delete after the Job's, in both forms, and none with pod.disruptionBudget: false", async () => {
    const dir = makeTestTempDir("dry-run-pdb-");
    mkdirSync(join(dir, "checkout"));
    writeFileSync(join(dir, "ci.yml"), "steps:\n  - name: a\n    command: b\n");
    const base = {
      checkout: join(dir, "checkout"),
      workflow: join(dir, "ci.yml"),
      out: join(dir, "out"),
      namespace: "ci",
      dryRun: true,
      runId: "dry-8",
    };
    const api = await renderDryRun(await resolveRunCommand({ ...base, transport: "api" }, {}));
    const calls = api.slice(api.indexOf("# API requests"));
    assert.match(
      api,
      /^# {3}disruption budget: a PodDisruptionBudget of the run \(maxUnavailable 0\): a node drain waits for the run$/m,
    );
    assert.match(
      calls,
      /\(body: Job \(the manifest above\)\)\n# {3}kubectl: [^\n]*\n# stdin: the run's PodDisruptionBudget[^\n]*\nPOST \/apis\/policy\/v1\/namespaces\/ci\/poddisruptionbudgets\?fieldValidation=Strict \(body: PodDisruptionBudget \(maxUnavailable 0, owned by the Job\)\)\n# {3}kubectl: kubectl --namespace ci create --request-timeout 30s -f - -o name$/m,
    );
    assert.match(
      calls,
      /^DELETE \/apis\/batch\/v1\/namespaces\/ci\/jobs\/knotless-run-dry-8 [^\n]*\n# {3}kubectl: [^\n]*\n# the run's PodDisruptionBudget[^\n]*\nDELETE \/apis\/policy\/v1\/namespaces\/ci\/poddisruptionbudgets\/knotless-run-dry-8\n# {3}kubectl: kubectl --namespace ci delete poddisruptionbudget\.policy knotless-run-dry-8 --ignore-not-found --wait=false --request-timeout 30s$/m,
    );
    const kubectl = await renderDryRun(await resolveRunCommand({ ...base, transport: "kubectl" }, {}));
    assert.match(
      kubectl,
      /^kubectl --namespace ci create --request-timeout 30s -f - -o name\n# {3}api: POST \/apis\/policy\/v1\/namespaces\/ci\/poddisruptionbudgets\?fieldValidation=Strict /m,
    );
    writeFileSync(join(dir, "ops.yml"), "pod:\n  disruptionBudget: false\n");
    const off = await renderDryRun(
      await resolveRunCommand({ ...base, transport: "api", config: join(dir, "ops.yml") }, {}),
    );
    assert.match(off, /^# {3}disruption budget: none \(pod\.disruptionBudget: false\)/m);
    assert.doesNotMatch(off, /poddisruptionbudget/i);
  });
});
