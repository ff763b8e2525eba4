import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  formatApiRequest,
  planCreateJob,
  planDeleteJob,
  planExec,
  planWatchEvents,
  planWatchJobs,
  planWatchPods,
} from "../../../src/cluster/api/api-request.js";
import { PLANNED_POD } from "../../../src/dry-run/call-plan.js";
import { describeRunPlan } from "../../support/described-plan.js";
import { exampleSettings } from "../../support/example-settings.js";

describe("the API requests of the plan", () => {
  const settings = exampleSettings({ steps: ["date", "hostname"] });
  const calls = describeRunPlan({ ...settings, secrets: [{ name: "TOKEN", value: "s3cr3t-value" }] });

  it("gives every call of a run its API requests, in the namespace the kubectl calls pin", () => {
    for (const call of calls) {
      assert.ok((call.api ?? []).length > 0, `no API request for ${call.args.join(" ")}`);
      for (const request of call.api!) assert.match(request.path, /^\/apis?\/(batch\/)?v1\/namespaces\/ci\//);
    }
  });

  it("creates the Job with a strictly validated POST whose body is the Job, and deletes it with background propagation", () => {
    const create = calls.find((call) => call.args.includes("create"))!;
    assert.equal(
      formatApiRequest(create.api![0]!),
      "POST /apis/batch/v1/namespaces/ci/jobs?fieldValidation=Strict (body: Job (the manifest above))",
    );
    assert.equal(
      formatApiRequest(calls.at(-1)!.api![0]!),
      "DELETE /apis/batch/v1/namespaces/ci/jobs/knotless-run-42 (body: DeleteOptions (background propagation))",
    );
  });

  it("execs over a WebSocket with each argv part as one command parameter and stdin only when the call writes to it", () => {
    const request = planExec("ci", PLANNED_POD, ["sh", "/knotless/helper.sh", "run", "0"], true);
    assert.equal(
      formatApiRequest(request),
      "GET /api/v1/namespaces/ci/pods/<pod>/exec?command=sh&command=%2Fknotless%2Fhelper.sh&command=run&command=0&container=run&stdin=true&stdout=true&stderr=true (WebSocket v5.channel.k8s.io)",
    );
    assert.doesNotMatch(planExec("ci", "p", ["true"], false).path, /stdin=/);
  });

  it("serves the Job watch from one list and watch of the namespace's Jobs of ours, with bookmarks, from the listed version", () => {
    const [list, watch] = planWatchJobs("ci").map(formatApiRequest);
    assert.equal(
      list,
      "GET /apis/batch/v1/namespaces/ci/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dknotless-runner-k8s (shared by every run of the process)",
    );
    assert.equal(
      watch,
      "GET /apis/batch/v1/namespaces/ci/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dknotless-runner-k8s&watch=true&allowWatchBookmarks=true&resourceVersion=<listed>&timeoutSeconds=300 (a watch stream, shared)",
    );
  });

  it("shows the pod wait as the one list and watch of the namespace's pods of ours that every run's wait is served from", () => {
    const podCall = calls.find((call) => call.args.includes("pods"))!;
    assert.deepEqual(podCall.api, planWatchPods("ci"));
    assert.equal(
      formatApiRequest(podCall.api![1]!),
      "GET /api/v1/namespaces/ci/pods?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dknotless-runner-k8s&watch=true&allowWatchBookmarks=true&resourceVersion=<listed>&timeoutSeconds=300 (a watch stream, shared)",
    );
  });

  it("shows the pod's events as the one list and watch of the namespace's pod events that every run's wait is served from", () => {
    const eventsCall = calls.find((call) => call.args.includes("events"))!;
    assert.deepEqual(eventsCall.api, planWatchEvents("ci", "Pod"));
    assert.deepEqual(eventsCall.api!.map(formatApiRequest), [
      "GET /api/v1/namespaces/ci/events?fieldSelector=involvedObject.kind%3DPod (shared by every run of the process)",
      "GET /api/v1/namespaces/ci/events?fieldSelector=involvedObject.kind%3DPod&watch=true&allowWatchBookmarks=true&resourceVersion=<listed>&timeoutSeconds=300 (a watch stream, shared)",
    ]);
  });

  it("claims a placeholder with preconditions and escapes names as the client sends them", () => {
    assert.equal(
      planDeleteJob("ci", "w", "preconditions on uid").body,
      "DeleteOptions (background propagation, preconditions on uid)",
    );
    assert.equal(
      planCreateJob("a b", "Job").path,
      "/apis/batch/v1/namespaces/a%20b/jobs?fieldValidation=Strict",
      "names are escaped as the client sends them",
    );
  });

  it("never puts a secret's value in a request: secrets go over the exec's stdin", () => {
    const text = calls.flatMap((call) => (call.api ?? []).map(formatApiRequest)).join("\n");
    assert.doesNotMatch(text, /s3cr3t/);
    const secretsExec = calls.find((call) => (call.stdin ?? "").includes("TOKEN"))!;
    assert.match(secretsExec.api![0]!.path, /stdin=true/);
  });

  it("names the kubeconfig context's namespace as a stand-in when the plan has none pinned", () => {
    const unpinned = describeRunPlan({ ...settings, target: { kubeconfig: "/tmp/kubeconfig" } });
    assert.ok(
      unpinned.every((call) =>
        call.api!.every((request) => formatApiRequest(request).includes("/namespaces/<namespace>/")),
      ),
    );
  });
});
