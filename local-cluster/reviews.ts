// Answers the review kinds (auth can-i, auth can-i --list, auth whoami, TokenReview, SubjectAccessReview) for the asking user, from RBAC.

import { badRequest } from "./api-error.js";
import { SUPERUSER_GROUP, listUserRules, type RequestAttributes, type UserInfo } from "./rbac.js";
import type { AccessControl } from "./access-control.js";
import { formatApiVersion, type ResourceType } from "./resources.js";

/** The attributes a review's spec asks about (resourceAttributes or nonResourceAttributes). */
function readReviewAttributes(spec: any): RequestAttributes {
  const resource = spec?.resourceAttributes;
  if (resource && typeof resource === "object") {
    return {
      kind: "resource",
      verb: String(resource.verb ?? ""),
      apiGroup: String(resource.group ?? ""),
      apiVersion: String(resource.version ?? ""),
      resource: String(resource.resource ?? ""),
      ...(resource.subresource ? { subresource: String(resource.subresource) } : {}),
      ...(resource.name ? { name: String(resource.name) } : {}),
      ...(resource.namespace ? { namespace: String(resource.namespace) } : {}),
    };
  }
  const nonResource = spec?.nonResourceAttributes;
  if (nonResource && typeof nonResource === "object")
    return { kind: "nonResource", verb: String(nonResource.verb ?? ""), path: String(nonResource.path ?? "") };
  throw badRequest("spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified");
}

function describeUser(user: UserInfo): object {
  return { username: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: [...user.groups] };
}

/** The answer to one review, made by `user` (the requester; SubjectAccessReview asks about the user in its spec). */
export function answerReview(type: ResourceType, body: any, user: UserInfo, access: AccessControl): object {
  const spec = body?.spec ?? {};
  const base = {
    apiVersion: formatApiVersion(type.group, type.version),
    kind: type.kind,
    metadata: { creationTimestamp: null },
    spec,
  };
  switch (type.resource) {
    case "selfsubjectreviews":
      return { ...base, status: { userInfo: describeUser(user) } };
    case "tokenreviews": {
      try {
        const reviewed = access.authenticate(`Bearer ${String(spec.token ?? "")}`);
        const record = access.tokens.find(String(spec.token ?? ""));
        return {
          ...base,
          status: { authenticated: true, user: describeUser(reviewed), audiences: [...(record?.audiences ?? [])] },
        };
      } catch {
        return { ...base, status: { authenticated: false, error: "invalid bearer token" } };
      }
    }
    case "selfsubjectrulesreviews":
      return { ...base, status: describeRules(user, spec.namespace ? String(spec.namespace) : undefined, access) };
    case "subjectaccessreviews": {
      const subject: UserInfo = {
        username: String(spec.user ?? ""),
        ...(spec.uid ? { uid: String(spec.uid) } : {}),
        groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [],
      };
      return { ...base, status: describeDecision(subject, readReviewAttributes(spec), access) };
    }
    default:
      return { ...base, status: describeDecision(user, readReviewAttributes(spec), access) };
  }
}

function describeDecision(user: UserInfo, attributes: RequestAttributes, access: AccessControl): object {
  const decision = access.decide(user, attributes);
  return { allowed: decision.allowed, ...(decision.reason ? { reason: decision.reason } : {}) };
}

/** What `kubectl auth can-i --list` shows: the rules bound to the user in the namespace, split as the API splits them. */
function describeRules(user: UserInfo, namespace: string | undefined, access: AccessControl): object {
  if (user.groups.includes(SUPERUSER_GROUP)) {
    return {
      resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
      nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
      incomplete: false,
    };
  }
  const { rules, errors } = listUserRules(user, namespace, access.readRbacObjects());
  const resourceRules = rules
    .filter((r) => (r.resources ?? []).length > 0)
    .map((r) => ({
      verbs: [...(r.verbs ?? [])],
      apiGroups: [...(r.apiGroups ?? [])],
      resources: [...(r.resources ?? [])],
      ...(r.resourceNames?.length ? { resourceNames: [...r.resourceNames] } : {}),
    }));
  const nonResourceRules = rules
    .filter((r) => (r.nonResourceURLs ?? []).length > 0)
    .map((r) => ({ verbs: [...(r.verbs ?? [])], nonResourceURLs: [...(r.nonResourceURLs ?? [])] }));
  return {
    resourceRules,
    nonResourceRules,
    incomplete: errors.length > 0,
    ...(errors.length ? { evaluationError: errors.join(", ") } : {}),
  };
}
