// RBAC as kube-apiserver evaluates it, as pure functions: bindings, roles and rules against one request's attributes.

import type { KubeObject } from "./types.js";

/** Who is asking, as an authenticator reports it. */
export interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
}

/** What a request asks to do, as kube-apiserver's RequestInfo describes it. */
export type RequestAttributes =
  | {
      readonly kind: "resource";
      readonly verb: string;
      /** "" for the core group. */
      readonly apiGroup: string;
      readonly apiVersion: string;
      readonly resource: string;
      readonly subresource?: string;
      readonly name?: string;
      /** Absent for a cluster-scoped request. */
      readonly namespace?: string;
    }
  | { readonly kind: "nonResource"; readonly verb: string; readonly path: string };

export interface PolicyRule {
  readonly verbs?: readonly string[];
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

/** The RBAC objects the decision reads: namespaced Roles and RoleBindings (all namespaces), cluster ones. */
export interface RbacObjects {
  readonly roles: readonly KubeObject[];
  readonly roleBindings: readonly KubeObject[];
  readonly clusterRoles: readonly KubeObject[];
  readonly clusterRoleBindings: readonly KubeObject[];
}

export interface Decision {
  readonly allowed: boolean;
  /** Why, in kube-apiserver's words: `RBAC: allowed by RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`; "" when nothing matched. */
  readonly reason: string;
}

/** Members of this group may do anything, before RBAC is asked (kube-apiserver's privileged group). */
export const SUPERUSER_GROUP = "system:masters";
const RBAC_GROUP = "rbac.authorization.k8s.io";

/** What kube-apiserver's bootstrap policy grants every authenticated user: discovery, and asking about oneself. */
export const BOOTSTRAP_POLICY: RbacObjects = {
  roles: [],
  roleBindings: [],
  clusterRoles: [
    buildClusterRole("system:basic-user", [
      {
        verbs: ["create"],
        apiGroups: ["authorization.k8s.io"],
        resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
      },
      { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"] },
    ]),
    buildClusterRole("system:discovery", [
      {
        verbs: ["get"],
        nonResourceURLs: [
          "/api",
          "/api/*",
          "/apis",
          "/apis/*",
          "/healthz",
          "/livez",
          "/openapi",
          "/openapi/*",
          "/readyz",
          "/version",
          "/version/",
        ],
      },
    ]),
    buildClusterRole("system:public-info-viewer", [
      { verbs: ["get"], nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"] },
    ]),
  ],
  clusterRoleBindings: ["system:basic-user", "system:discovery", "system:public-info-viewer"].map((name) => ({
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name, uid: "", resourceVersion: "", creationTimestamp: "" },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name },
    subjects: [{ apiGroup: RBAC_GROUP, kind: "Group", name: "system:authenticated" }],
  })),
};

function buildClusterRole(name: string, rules: PolicyRule[]): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRole",
    metadata: { name, uid: "", resourceVersion: "", creationTimestamp: "" },
    rules,
  };
}

/** The user name of a ServiceAccount: `system:serviceaccount:NS:NAME`. */
export function formatServiceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** Decides one request: the superuser group, then the bootstrap policy, then ClusterRoleBindings, then the namespace's RoleBindings. */
export function authorize(user: UserInfo, attributes: RequestAttributes, objects: RbacObjects): Decision {
  if (user.groups.includes(SUPERUSER_GROUP)) return { allowed: true, reason: "" };
  const errors: string[] = [];
  for (const grant of listGrants(
    user,
    attributes.kind === "resource" ? attributes.namespace : undefined,
    objects,
    errors,
  )) {
    if (grant.rules.some((rule) => allowsRequest(rule, attributes)))
      return { allowed: true, reason: `RBAC: allowed by ${grant.source}` };
  }
  return {
    allowed: false,
    reason: errors.length === 0 ? "" : `RBAC: ${errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`}`,
  };
}

/** The rules that apply to the user in a namespace (or at the cluster scope), for SelfSubjectRulesReview. */
export function listUserRules(
  user: UserInfo,
  namespace: string | undefined,
  objects: RbacObjects,
): { rules: PolicyRule[]; errors: string[] } {
  const errors: string[] = [];
  const rules = listGrants(user, namespace, objects, errors).flatMap((grant) => grant.rules);
  return { rules, errors };
}

/** One binding that applies to the user, with the rules of the role it names. */
interface Grant {
  readonly source: string;
  readonly rules: readonly PolicyRule[];
}

function listGrants(user: UserInfo, namespace: string | undefined, objects: RbacObjects, errors: string[]): Grant[] {
  const grants: Grant[] = [];
  const clusterRoles = [...BOOTSTRAP_POLICY.clusterRoles, ...objects.clusterRoles];
  for (const binding of [...BOOTSTRAP_POLICY.clusterRoleBindings, ...objects.clusterRoleBindings]) {
    const subject = findSubject(binding, user, "");
    if (!subject) continue;
    const role = findRole(binding, clusterRoles, [], errors);
    if (role)
      grants.push({
        source: `ClusterRoleBinding "${binding.metadata.name}" of ClusterRole "${binding.roleRef?.name}" to ${describeSubject(subject, "")}`,
        rules: role.rules ?? [],
      });
  }
  if (namespace === undefined) return grants;
  const roles = objects.roles.filter((r) => r.metadata.namespace === namespace);
  for (const binding of objects.roleBindings.filter((b) => b.metadata.namespace === namespace)) {
    const subject = findSubject(binding, user, namespace);
    if (!subject) continue;
    const role = findRole(binding, clusterRoles, roles, errors);
    if (role) {
      const source = `RoleBinding "${binding.metadata.name}/${namespace}" of ${binding.roleRef?.kind} "${binding.roleRef?.name}" to ${describeSubject(subject, namespace)}`;
      grants.push({ source, rules: role.rules ?? [] });
    }
  }
  return grants;
}

interface Subject {
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

function findSubject(binding: KubeObject, user: UserInfo, bindingNamespace: string): Subject | undefined {
  return ((binding.subjects ?? []) as Subject[]).find((s) => appliesToUser(s, user, bindingNamespace));
}

function appliesToUser(subject: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case "User":
      return subject.name === user.username;
    case "Group":
      return subject.name !== undefined && user.groups.includes(subject.name);
    case "ServiceAccount": {
      const namespace = subject.namespace || bindingNamespace;
      return (
        namespace !== "" &&
        subject.name !== undefined &&
        user.username === formatServiceAccountUser(namespace, subject.name)
      );
    }
    default:
      return false;
  }
}

function describeSubject(subject: Subject, bindingNamespace: string): string {
  if (subject.kind === "ServiceAccount")
    return `ServiceAccount "${subject.name}/${subject.namespace || bindingNamespace}"`;
  return `${subject.kind} "${subject.name}"`;
}

/** The role a binding names; a missing one is an error kube-apiserver reports as the reason of a denial. */
function findRole(
  binding: KubeObject,
  clusterRoles: readonly KubeObject[],
  roles: readonly KubeObject[],
  errors: string[],
): KubeObject | undefined {
  const ref = binding.roleRef as { kind?: string; name?: string } | undefined;
  const pool = ref?.kind === "ClusterRole" ? clusterRoles : ref?.kind === "Role" ? roles : [];
  const role = pool.find((r) => r.metadata.name === ref?.name);
  if (!role)
    errors.push(`${ref?.kind === "ClusterRole" ? "clusterrole" : "role"}.${RBAC_GROUP} "${ref?.name}" not found`);
  return role;
}

/** Whether one rule allows the request (kube-apiserver's RuleAllows). */
export function allowsRequest(rule: PolicyRule, attributes: RequestAttributes): boolean {
  if (!matchesAny(rule.verbs, attributes.verb)) return false;
  if (attributes.kind === "nonResource")
    return (rule.nonResourceURLs ?? []).some((url) => matchesUrl(url, attributes.path));
  if (!matchesAny(rule.apiGroups, attributes.apiGroup)) return false;
  if (!matchesResource(rule.resources ?? [], attributes.resource, attributes.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (attributes.name !== undefined && names.includes(attributes.name));
}

function matchesAny(list: readonly string[] | undefined, value: string): boolean {
  return (list ?? []).some((item) => item === "*" || item === value);
}

/** `*` matches everything, `pods/exec` its subresource only, `*\/exec` that subresource of any resource. */
function matchesResource(resources: readonly string[], resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return resources.some((r) => r === "*" || r === combined || (subresource !== undefined && r === `*/${subresource}`));
}

function matchesUrl(ruleUrl: string, path: string): boolean {
  if (ruleUrl === "*" || ruleUrl === path) return true;
  return ruleUrl.endsWith("*") && path.startsWith(ruleUrl.slice(0, -1));
}
