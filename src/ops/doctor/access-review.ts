// SelfSubjectAccessReviews for every permission the runner needs (and for cluster-admin), and the reading of the answers: pure.
import type { ApiPermission } from "../../cluster/permissions.js";
import { parseJsonDocuments } from "../../manifests/json-documents.js";

/** One question: may I `verb` `resource` (in `namespace`; absent: every namespace)? */
export interface AccessQuestion {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace?: string;
}

/** The answer the API server gave, or undefined when it gave none for that question. */
export interface AccessAnswer {
  readonly allowed: boolean;
  readonly reason: string | undefined;
}

/** `'*' '*' --all-namespaces`: a credential that may do this is cluster-admin. */
export const CLUSTER_ADMIN_QUESTION: AccessQuestion = { verb: "*", group: "*", resource: "*" };

/** The questions for each verb of each rule, in `namespace`; `pods/exec` becomes resource pods, subresource exec. */
export function buildPermissionQuestions(permissions: readonly ApiPermission[], namespace: string): AccessQuestion[] {
  return permissions.flatMap((rule) => {
    const [resource, subresource] = rule.resource.split("/") as [string, string | undefined];
    return rule.verbs.map((verb) => ({
      verb,
      group: rule.apiGroup,
      resource,
      ...(subresource ? { subresource } : {}),
      namespace,
    }));
  });
}

/** The SelfSubjectAccessReviews, one per question. */
export function buildAccessReviews(questions: readonly AccessQuestion[]): object[] {
  return questions.map((q) => ({
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: {
      resourceAttributes: {
        verb: q.verb,
        group: q.group,
        resource: q.resource,
        ...(q.subresource ? { subresource: q.subresource } : {}),
        ...(q.namespace ? { namespace: q.namespace } : {}),
      },
    },
  }));
}

/** A List of SelfSubjectAccessReviews, one per question, for `kubectl create -f -` (JSON, whatever the kubectl version). */
export function buildAccessReviewList(questions: readonly AccessQuestion[]): string {
  return JSON.stringify({ apiVersion: "v1", kind: "List", items: buildAccessReviews(questions) });
}

function keyOf(attributes: {
  verb?: unknown;
  group?: unknown;
  resource?: unknown;
  subresource?: unknown;
  namespace?: unknown;
}): string {
  const text = (value: unknown): string => (typeof value === "string" ? value : "");
  return [
    text(attributes.verb),
    text(attributes.group),
    text(attributes.resource),
    text(attributes.subresource),
    text(attributes.namespace),
  ].join("|");
}

/**
 * Matches the reviews the server answered (objects, or text of JSON documents: one each, or a List) with the
 * questions by the attributes the server echoes back, not by position. A question without an answer maps to undefined.
 */
export function readAccessAnswers(
  answers: string | readonly unknown[],
  questions: readonly AccessQuestion[],
): Map<AccessQuestion, AccessAnswer | undefined> {
  const byKey = new Map<string, AccessAnswer>();
  let documents: readonly unknown[];
  try {
    documents = typeof answers === "string" ? parseJsonDocuments(answers) : answers;
  } catch {
    documents = [];
  }
  const reviews = documents.flatMap((doc) =>
    (doc as { kind?: unknown }).kind === "List" ? (((doc as { items?: unknown[] }).items ?? []) as unknown[]) : [doc],
  );
  for (const review of reviews) {
    const { spec, status } = (review ?? {}) as {
      spec?: { resourceAttributes?: Record<string, unknown> };
      status?: { allowed?: unknown; reason?: unknown };
    };
    if (!spec?.resourceAttributes || typeof status?.allowed !== "boolean") continue;
    byKey.set(keyOf(spec.resourceAttributes), {
      allowed: status.allowed,
      reason: typeof status.reason === "string" && status.reason !== "" ? status.reason : undefined,
    });
  }
  return new Map(questions.map((q) => [q, byKey.get(keyOf(q))]));
}

/** The user name a SelfSubjectReview answered with (the object, or its JSON text), if any. */
export function readReviewedUser(answer: unknown): string | undefined {
  try {
    const review = typeof answer === "string" ? (JSON.parse(answer) as unknown) : answer;
    const username = (review as { status?: { userInfo?: { username?: unknown } } } | null | undefined)?.status?.userInfo
      ?.username;
    return typeof username === "string" && username !== "" ? username : undefined;
  } catch {
    return undefined;
  }
}

/** The SelfSubjectReview `kubectl auth whoami` sends. */
export const SELF_SUBJECT_REVIEW = { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" };
