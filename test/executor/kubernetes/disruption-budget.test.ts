// Tests of the run's PodDisruptionBudget through the executor: created right after the Job, deleted at teardown, refusals.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { InfraError } from "../../../src/core/errors.js";
import type { RunEventInput } from "../../../src/events/run-events.js";
import type { ExecutorContext, RunSettings } from "../../../src/executor/kubernetes/context.js";
import { KubernetesExecutor } from "../../../src/executor/kubernetes/kubernetes-executor.js";
import { exampleSettings } from "../../support/example-settings.js";
import { ScriptedKubectl, type ScriptedReply } from "../../support/scripted-kubectl.js";
import { podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";

const JOB_UID = "6a1d7c1e-0000-4000-8000-000000000042";
const FORBIDDEN =
  'Error from server (Forbidden): error when creating "STDIN": poddisruptionbudgets.policy is forbidden: User "ci" cannot create resource "poddisruptionbudgets" in API group "policy" in the namespace "ci"\n';

/** An executor over a scripted kubectl whose Job create answers with a uid; `budgetReply` answers the budget's create. */
function buildExecutor(
  settings: Partial<RunSettings>,
  budgetReplies: readonly ScriptedReply[] = [{ stdout: "poddisruptionbudget.policy/knotless-run-42\n" }],
  deleteBudgetReply: ScriptedReply = { stdout: 'poddisruptionbudget.policy "knotless-run-42" deleted\n' },
): { executor: KubernetesExecutor; kubectl: ScriptedKubectl; events: RunEventInput[] } {
  const kubectl = new ScriptedKubectl();
  let budgets = 0;
  // One rule for both creates: the manifest on stdin says which it is (a rule's filter runs before stdin arrives).
  kubectl.on("create", (call) => {
    const object = JSON.parse(call.stdin ?? "") as IJob | IPodDisruptionBudget;
    if (object.kind === "PodDisruptionBudget") return budgetReplies[Math.min(budgets++, budgetReplies.length - 1)]!;
    return { stdout: JSON.stringify({ ...object, metadata: { ...object.metadata, namespace: "ci", uid: JOB_UID } }) };
  });
  kubectl.on("get pods", podList(runningPod()));
  kubectl.on("get job", { hang: true });
  kubectl.on("delete job", {});
  kubectl.on("delete poddisruptionbudget.policy", deleteBudgetReply);
  kubectl.on("patch job", {});
  const events: RunEventInput[] = [];
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), claimWarm: false, ...settings },
    timings: UNIT_TIMINGS,
    get cluster() {
      return kubectl.cluster(this.settings.target);
    },
    emit: (event) => events.push(event),
    signal: new AbortController().signal,
    requestCancel: () => {},
    cleanupSignal: () => new AbortController().signal,
  };
  return { executor: new KubernetesExecutor(ctx), kubectl, events };
}

const verbs = (kubectl: ScriptedKubectl): string[] =>
  kubectl.calls
    .filter((call) => ["create", "delete"].includes(call.command[0]!))
    .map((call) =>
      call.command[0] === "create"
        ? `create ${(JSON.parse(call.stdin ?? "{}") as { kind: string }).kind}`
        : call.command.slice(0, 2).join(" "),
    );

const phaseDetail = (events: RunEventInput[], phase: string): string => {
  const end = events.find((e) => e.kind === "phase-end" && e.phase === phase);
  return end?.kind === "phase-end" ? end.detail : "";
};

describe("the run's disruption budget in the executor", () => {
  it("is created right after the Job, owned by it, and deleted after the Job at teardown", async () => {
    const { executor, kubectl, events } = buildExecutor({ disruptionBudget: true });
    await executor.setup();
    assert.deepEqual(verbs(kubectl), ["create Job", "create PodDisruptionBudget"]);
    const create = kubectl.callsTo("create").find((call) => call.stdin?.includes("PodDisruptionBudget"))!;
    assert.equal(create.args[create.args.indexOf("--namespace") + 1], "ci", "in the Job's namespace");
    const budget = JSON.parse(create.stdin!) as IPodDisruptionBudget;
    assert.equal(budget.spec?.maxUnavailable, 0);
    assert.deepEqual(budget.metadata?.ownerReferences, [
      { apiVersion: "batch/v1", kind: "Job", name: "knotless-run-42", uid: JOB_UID },
    ]);
    assert.match(
      phaseDetail(events, "create"),
      /; PodDisruptionBudget knotless-run-42 \(maxUnavailable 0\) guards the pod against drains$/,
    );
    const report = await executor.teardown();
    assert.deepEqual(verbs(kubectl), [
      "create Job",
      "create PodDisruptionBudget",
      "delete job",
      "delete poddisruptionbudget.policy",
    ]);
    assert.match(report.detail, /^deleted Job knotless-run-42; deleted PodDisruptionBudget knotless-run-42$/);
    assert.equal(report.leftBehind, false);
  });

  it("creates none, and deletes none, when the setting is off", async () => {
    const { executor, kubectl } = buildExecutor({ disruptionBudget: false });
    await executor.setup();
    await executor.teardown();
    assert.deepEqual(verbs(kubectl), ["create Job", "delete job"]);
  });

  it("takes a budget that exists already (a retried create's) as created", async () => {
    const { executor, kubectl, events } = buildExecutor({ disruptionBudget: true }, [
      {
        exitCode: 1,
        stderr:
          'Error from server (AlreadyExists): error when creating "STDIN": poddisruptionbudgets.policy "knotless-run-42" already exists\n',
      },
    ]);
    await executor.setup();
    assert.match(
      phaseDetail(events, "create"),
      /PodDisruptionBudget knotless-run-42 \(maxUnavailable 0\) was there already/,
    );
    await executor.teardown();
    assert.deepEqual(verbs(kubectl), [
      "create Job",
      "create PodDisruptionBudget",
      "delete job",
      "delete poddisruptionbudget.policy",
    ]);
  });

  it("fails setup as forbidden, naming the permission, and teardown deletes the Job: nothing is left", async () => {
    const { executor, kubectl } = buildExecutor({ disruptionBudget: true }, [{ exitCode: 1, stderr: FORBIDDEN }]);
    await assert.rejects(
      executor.setup(),
      (error) =>
        error instanceof InfraError &&
        error.reason === "forbidden" &&
        /could not create PodDisruptionBudget knotless-run-42 \(the run needs create on poddisruptionbudgets\.policy; pod\.disruptionBudget: false runs without one\): .*cannot create resource "poddisruptionbudgets"/.test(
          error.message,
        ),
    );
    assert.equal(kubectl.callsTo("create").length, 2, "a refusal is not retried");
    assert.equal(kubectl.callsTo("get pods").length, 0, "no pod wait after the refusal");
    const report = await executor.teardown();
    assert.deepEqual(verbs(kubectl), [
      "create Job",
      "create PodDisruptionBudget",
      "delete job",
      "delete poddisruptionbudget.policy",
    ]);
    assert.equal(report.leftBehind, false);
  });

  it("retries a transient failure of the budget's create", async () => {
    const { executor, kubectl } = buildExecutor({ disruptionBudget: true }, [
      {
        exitCode: 1,
        stderr: "Error from server (InternalError): Internal error occurred: etcdserver: request timed out\n",
      },
      { stdout: "poddisruptionbudget.policy/knotless-run-42\n" },
    ]);
    await executor.setup();
    assert.deepEqual(verbs(kubectl), ["create Job", "create PodDisruptionBudget", "create PodDisruptionBudget"]);
    await executor.teardown();
  });

  it("warns when the budget cannot be deleted, and leaves nothing the run must name: it goes with the Job", async () => {
    const refused = {
      exitCode: 1,
      stderr:
        'Error from server (Forbidden): poddisruptionbudgets.policy "knotless-run-42" is forbidden: User "ci" cannot delete resource "poddisruptionbudgets" in API group "policy" in the namespace "ci"\n',
    };
    const { executor, events } = buildExecutor({ disruptionBudget: true }, undefined, refused);
    await executor.setup();
    const report = await executor.teardown();
    assert.equal(report.leftBehind, false);
    assert.ok(
      events.some(
        (e) =>
          e.kind === "notice" &&
          e.level === "warning" &&
          /could not delete PodDisruptionBudget knotless-run-42 \(.*cannot delete resource "poddisruptionbudgets".*\): it goes with the Job \(owner reference\), or with gc/.test(
            e.message,
          ),
      ),
    );
  });
});
