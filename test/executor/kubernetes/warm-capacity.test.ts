// Tests of warm capacity through the executor: the claim before the create, what the run reports, and --keep-warm at teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { RunEventInput } from "../../../src/events/run-events.js";
import type { ExecutorContext, RunSettings } from "../../../src/executor/kubernetes/context.js";
import { KubernetesExecutor } from "../../../src/executor/kubernetes/kubernetes-executor.js";
import { exampleSettings } from "../../support/example-settings.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";
import { jobList, placeholderJob } from "../../warm/placeholder-jobs.js";
import { endedPod, podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";

/** `first` scripts rules that win over the defaults (the first matching rule answers); `refusePlaceholders` makes their creates Forbidden. */
function buildExecutor(
  settings: Partial<RunSettings> = {},
  placeholders = jobList(),
  first: (kubectl: ScriptedKubectl) => void = () => {},
  refusePlaceholders = false,
): { executor: KubernetesExecutor; kubectl: ScriptedKubectl; events: RunEventInput[] } {
  const kubectl = new ScriptedKubectl();
  first(kubectl);
  kubectl.on("get jobs", { stdout: placeholders });
  kubectl.on("delete --raw", { stdout: "{}" });
  kubectl.on("create", (call) => {
    const job = JSON.parse(call.stdin ?? "") as IJob;
    if (refusePlaceholders && job.metadata?.name?.startsWith("knotless-warm-"))
      return {
        exitCode: 1,
        stderr: 'Error from server (Forbidden): jobs.batch is forbidden: User "ci" cannot create resource "jobs"\n',
      };
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
  });
  kubectl.on("get pods", podList(runningPod()));
  kubectl.on("get job", { hang: true });
  kubectl.on("delete job", {});
  kubectl.on("patch job", {});
  const events: RunEventInput[] = [];
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), ...settings },
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

const phaseDetail = (events: RunEventInput[], phase: string): string => {
  const end = events.find((e) => e.kind === "phase-end" && e.phase === phase);
  return end?.kind === "phase-end" ? end.detail : "";
};
const created = (kubectl: ScriptedKubectl): IJob[] =>
  kubectl.callsTo("create").map((call) => JSON.parse(call.stdin!) as IJob);

describe("warm capacity in the executor", () => {
  it("claims a covering placeholder right before creating the Job, and says the run is warm", async () => {
    const { executor, kubectl, events } = buildExecutor(
      {},
      jobList(placeholderJob({ startedAt: Date.now() - 10_000 })),
    );
    await executor.setup();
    const order = kubectl.calls.map((call) => call.command.slice(0, 2).join(" "));
    assert.deepEqual(order.slice(0, 3), ["get jobs", "delete --raw", "create --request-timeout"]);
    assert.equal(executor.capacity, "warm");
    assert.ok(executor.podWaitMs !== undefined && executor.podWaitMs >= 0);
    assert.match(
      phaseDetail(events, "create"),
      /^created Job ci\/knotless-run-42 on warm capacity: claimed placeholder ci\/knotless-warm-0 \(it held a node, 1m[45]\d+s left\)$/,
    );
    assert.match(phaseDetail(events, "pod"), /^pod knotless-run-42-x7k2p running on node-a, warm: the pod waited \d/);
    await executor.teardown();
  });

  it("is cold when there is none, and makes no warm call at all with claimWarm false", async () => {
    const cold = buildExecutor();
    await cold.executor.setup();
    assert.equal(cold.executor.capacity, "cold");
    assert.match(phaseDetail(cold.events, "create"), /on cold capacity: no warm placeholder$/);
    assert.equal(cold.kubectl.callsTo("delete --raw").length, 0);
    await cold.executor.teardown();
    const off = buildExecutor({ claimWarm: false }, jobList(placeholderJob({ startedAt: Date.now() })));
    await off.executor.setup();
    assert.deepEqual(
      [off.kubectl.callsTo("get jobs").length, off.kubectl.callsTo("delete --raw").length, off.executor.capacity],
      [0, 0, "cold"],
    );
    await off.executor.teardown();
  });

  it("leaves a placeholder of the run's size and image after deleting the Job with --keep-warm", async () => {
    const { executor, kubectl, events } = buildExecutor({
      keepWarm: { seconds: 120, maxWarm: 1 },
      cpu: "1",
      memory: "2Gi",
      image: "alpine:3.20",
    });
    await executor.setup();
    const report = await executor.teardown();
    const after = kubectl.calls.slice(
      kubectl.calls.findIndex((call) => call.command.join(" ").startsWith("delete job")),
    );
    assert.deepEqual(
      after.map((call) => call.command.slice(0, 2).join(" ")),
      ["delete job", "get jobs", "create --request-timeout"],
    );
    const placeholder = created(kubectl).at(-1)!;
    assert.equal(placeholder.metadata?.name, "knotless-warm-0");
    assert.equal(placeholder.spec?.activeDeadlineSeconds, 120);
    const container = placeholder.spec!.template.spec!.containers[0]!;
    assert.deepEqual([container.image, container.resources?.requests], ["alpine:3.20", { cpu: "1", memory: "2Gi" }]);
    assert.equal(report.leftBehind, false);
    assert.match(
      phaseDetail(events, "teardown"),
      /^deleted Job knotless-run-42; left warm placeholder knotless-warm-0 for 2m00s/,
    );
  });

  it("leaves no placeholder when the run's pod never ran, and only warns when one cannot be left", async () => {
    const never = buildExecutor({ keepWarm: { seconds: 120, maxWarm: 1 } }, jobList(), (kubectl) =>
      kubectl.on("get pods", podList(endedPod("Failed", "Evicted", "gone"))),
    );
    await assert.rejects(never.executor.setup());
    await never.executor.teardown();
    assert.equal(created(never.kubectl).filter((job) => job.metadata?.name?.startsWith("knotless-warm-")).length, 0);

    const refused = buildExecutor({ keepWarm: { seconds: 120, maxWarm: 1 } }, jobList(), () => {}, true);
    await refused.executor.setup();
    const report = await refused.executor.teardown();
    assert.deepEqual(
      [report.deleted, report.leftBehind],
      [true, false],
      "the run's own verdict does not depend on the placeholder",
    );
    const warnings = refused.events.flatMap((e) => (e.kind === "notice" && e.level === "warning" ? [e.message] : []));
    assert.ok(
      warnings.some((message) =>
        /could not leave a warm placeholder: could not create placeholder knotless-warm-0/.test(message),
      ),
      warnings.join("\n"),
    );
  });
});
