import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildAccessReviewList,
  buildPermissionQuestions,
  CLUSTER_ADMIN_QUESTION,
  readAccessAnswers,
  readReviewedUser,
} from "../../../src/ops/doctor/access-review.js";

const RULES = [
  { apiGroup: "batch", resource: "jobs", verbs: ["create", "patch"] },
  { apiGroup: "", resource: "pods/exec", verbs: ["create"] },
];

/** What the API server answers to a review: the spec echoed (empty fields left out, as Go's omitempty does), a status. */
function answer(attributes: Record<string, string>, allowed: boolean, reason?: string): object {
  const echoed = Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== ""));
  return {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: echoed },
    status: { allowed, ...(reason ? { reason } : {}) },
  };
}

describe("the access reviews", () => {
  const questions = buildPermissionQuestions(RULES, "ci");

  it("ask one question per verb, a subresource split off its resource, in the namespace", () => {
    assert.deepEqual(questions, [
      { verb: "create", group: "batch", resource: "jobs", namespace: "ci" },
      { verb: "patch", group: "batch", resource: "jobs", namespace: "ci" },
      { verb: "create", group: "", resource: "pods", subresource: "exec", namespace: "ci" },
    ]);
    const list = JSON.parse(buildAccessReviewList([...questions, CLUSTER_ADMIN_QUESTION])) as {
      kind: string;
      items: Array<{ spec: { resourceAttributes: object } }>;
    };
    assert.equal(list.kind, "List");
    assert.deepEqual(list.items[2]!.spec.resourceAttributes, {
      verb: "create",
      group: "",
      resource: "pods",
      subresource: "exec",
      namespace: "ci",
    });
    assert.deepEqual(
      list.items[3]!.spec.resourceAttributes,
      { verb: "*", group: "*", resource: "*" },
      "cluster-admin: every namespace",
    );
  });

  it("match answers printed one after the other by what the server echoes, whatever their order, and a no is a no", () => {
    const printed = [
      answer({ verb: "create", group: "", resource: "pods", subresource: "exec", namespace: "ci" }, true),
      answer({ verb: "patch", group: "batch", resource: "jobs", namespace: "ci" }, false, "no RBAC policy matched"),
      answer({ verb: "create", group: "batch", resource: "jobs", namespace: "ci" }, true),
    ]
      .map((doc) => JSON.stringify(doc, null, 4))
      .join("\n");
    const answers = readAccessAnswers(printed, [...questions, CLUSTER_ADMIN_QUESTION]);
    assert.deepEqual(
      questions.map((q) => answers.get(q)?.allowed),
      [true, false, true],
    );
    assert.equal(answers.get(questions[1]!)?.reason, "no RBAC policy matched");
    assert.equal(answers.get(CLUSTER_ADMIN_QUESTION), undefined, "no answer is not a yes");
  });

  it("read answers wrapped in a List too, and nothing from output that is not JSON", () => {
    const list = JSON.stringify({
      kind: "List",
      items: [answer({ verb: "create", group: "batch", resource: "jobs", namespace: "ci" }, true)],
    });
    assert.equal(readAccessAnswers(list, questions).get(questions[0]!)?.allowed, true);
    assert.equal(
      readAccessAnswers("error: the server could not find the requested resource", questions).get(questions[0]!),
      undefined,
    );
  });

  it("read the user a SelfSubjectReview names", () => {
    assert.equal(
      readReviewedUser(JSON.stringify({ status: { userInfo: { username: "system:serviceaccount:ci:knotless" } } })),
      "system:serviceaccount:ci:knotless",
    );
    assert.equal(readReviewedUser("{}"), undefined);
  });
});
