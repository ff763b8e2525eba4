// Field tables of the Kubernetes protobuf messages the local cluster decodes (request bodies of kubectl's typed
// subcommands): message -> field number -> [name, type, repeated]. Facts from the generated.proto files of
// kubernetes/api@10b39a39bcee and kubernetes/apimachinery@eed236ceee2c; a map type is ["map", key type, value type].
// Time, MicroTime and FieldsV1 are decoded by hand (local-cluster/protobuf-body.ts).

export type ProtoType = string | readonly ["map", string, string];
export type ProtoField = readonly [name: string, type: ProtoType, repeated: boolean];

export const PROTO_MESSAGES: Readonly<Record<string, Readonly<Record<number, ProtoField>>>> = {
  "k8s.io.api.authentication.v1.AttestationValue": { 1: ["items", "string", true] },
  "k8s.io.api.authentication.v1.BoundObjectReference": {
    1: ["kind", "string", false],
    2: ["apiVersion", "string", false],
    3: ["name", "string", false],
    4: ["uID", "string", false],
  },
  "k8s.io.api.authentication.v1.ExtraValue": { 1: ["items", "string", true] },
  "k8s.io.api.authentication.v1.SelfSubjectReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["status", "k8s.io.api.authentication.v1.SelfSubjectReviewStatus", false],
  },
  "k8s.io.api.authentication.v1.SelfSubjectReviewStatus": {
    1: ["userInfo", "k8s.io.api.authentication.v1.UserInfo", false],
  },
  "k8s.io.api.authentication.v1.TokenRequest": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authentication.v1.TokenRequestSpec", false],
    3: ["status", "k8s.io.api.authentication.v1.TokenRequestStatus", false],
  },
  "k8s.io.api.authentication.v1.TokenRequestSpec": {
    1: ["audiences", "string", true],
    3: ["boundObjectRef", "k8s.io.api.authentication.v1.BoundObjectReference", false],
    4: ["expirationSeconds", "int64", false],
    5: ["attestations", ["map", "string", "k8s.io.api.authentication.v1.AttestationValue"], false],
  },
  "k8s.io.api.authentication.v1.TokenRequestStatus": {
    1: ["token", "string", false],
    2: ["expirationTimestamp", "k8s.io.apimachinery.pkg.apis.meta.v1.Time", false],
  },
  "k8s.io.api.authentication.v1.TokenReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authentication.v1.TokenReviewSpec", false],
    3: ["status", "k8s.io.api.authentication.v1.TokenReviewStatus", false],
  },
  "k8s.io.api.authentication.v1.TokenReviewSpec": { 1: ["token", "string", false], 2: ["audiences", "string", true] },
  "k8s.io.api.authentication.v1.TokenReviewStatus": {
    1: ["authenticated", "bool", false],
    2: ["user", "k8s.io.api.authentication.v1.UserInfo", false],
    3: ["error", "string", false],
    4: ["audiences", "string", true],
  },
  "k8s.io.api.authentication.v1.UserInfo": {
    1: ["username", "string", false],
    2: ["uid", "string", false],
    3: ["groups", "string", true],
    4: ["extra", ["map", "string", "k8s.io.api.authentication.v1.ExtraValue"], false],
  },
  "k8s.io.api.authorization.v1.ExtraValue": { 1: ["items", "string", true] },
  "k8s.io.api.authorization.v1.FieldSelectorAttributes": {
    1: ["rawSelector", "string", false],
    2: ["requirements", "k8s.io.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement", true],
  },
  "k8s.io.api.authorization.v1.LabelSelectorAttributes": {
    1: ["rawSelector", "string", false],
    2: ["requirements", "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", true],
  },
  "k8s.io.api.authorization.v1.LocalSubjectAccessReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authorization.v1.SubjectAccessReviewSpec", false],
    3: ["status", "k8s.io.api.authorization.v1.SubjectAccessReviewStatus", false],
  },
  "k8s.io.api.authorization.v1.NonResourceAttributes": { 1: ["path", "string", false], 2: ["verb", "string", false] },
  "k8s.io.api.authorization.v1.NonResourceRule": {
    1: ["verbs", "string", true],
    2: ["nonResourceURLs", "string", true],
  },
  "k8s.io.api.authorization.v1.ResourceAttributes": {
    1: ["namespace", "string", false],
    2: ["verb", "string", false],
    3: ["group", "string", false],
    4: ["version", "string", false],
    5: ["resource", "string", false],
    6: ["subresource", "string", false],
    7: ["name", "string", false],
    8: ["fieldSelector", "k8s.io.api.authorization.v1.FieldSelectorAttributes", false],
    9: ["labelSelector", "k8s.io.api.authorization.v1.LabelSelectorAttributes", false],
  },
  "k8s.io.api.authorization.v1.ResourceRule": {
    1: ["verbs", "string", true],
    2: ["apiGroups", "string", true],
    3: ["resources", "string", true],
    4: ["resourceNames", "string", true],
  },
  "k8s.io.api.authorization.v1.SelfSubjectAccessReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authorization.v1.SelfSubjectAccessReviewSpec", false],
    3: ["status", "k8s.io.api.authorization.v1.SubjectAccessReviewStatus", false],
  },
  "k8s.io.api.authorization.v1.SelfSubjectAccessReviewSpec": {
    1: ["resourceAttributes", "k8s.io.api.authorization.v1.ResourceAttributes", false],
    2: ["nonResourceAttributes", "k8s.io.api.authorization.v1.NonResourceAttributes", false],
  },
  "k8s.io.api.authorization.v1.SelfSubjectRulesReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authorization.v1.SelfSubjectRulesReviewSpec", false],
    3: ["status", "k8s.io.api.authorization.v1.SubjectRulesReviewStatus", false],
  },
  "k8s.io.api.authorization.v1.SelfSubjectRulesReviewSpec": { 1: ["namespace", "string", false] },
  "k8s.io.api.authorization.v1.SubjectAccessReview": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["spec", "k8s.io.api.authorization.v1.SubjectAccessReviewSpec", false],
    3: ["status", "k8s.io.api.authorization.v1.SubjectAccessReviewStatus", false],
  },
  "k8s.io.api.authorization.v1.SubjectAccessReviewSpec": {
    1: ["resourceAttributes", "k8s.io.api.authorization.v1.ResourceAttributes", false],
    2: ["nonResourceAttributes", "k8s.io.api.authorization.v1.NonResourceAttributes", false],
    3: ["user", "string", false],
    4: ["groups", "string", true],
    5: ["extra", ["map", "string", "k8s.io.api.authorization.v1.ExtraValue"], false],
    6: ["uid", "string", false],
  },
  "k8s.io.api.authorization.v1.SubjectAccessReviewStatus": {
    1: ["allowed", "bool", false],
    2: ["reason", "string", false],
    3: ["evaluationError", "string", false],
    4: ["denied", "bool", false],
  },
  "k8s.io.api.authorization.v1.SubjectRulesReviewStatus": {
    1: ["resourceRules", "k8s.io.api.authorization.v1.ResourceRule", true],
    2: ["nonResourceRules", "k8s.io.api.authorization.v1.NonResourceRule", true],
    3: ["incomplete", "bool", false],
    4: ["evaluationError", "string", false],
  },
  "k8s.io.api.core.v1.LocalObjectReference": { 1: ["name", "string", false] },
  "k8s.io.api.core.v1.ObjectReference": {
    1: ["kind", "string", false],
    2: ["namespace", "string", false],
    3: ["name", "string", false],
    4: ["uid", "string", false],
    5: ["apiVersion", "string", false],
    6: ["resourceVersion", "string", false],
    7: ["fieldPath", "string", false],
  },
  "k8s.io.api.core.v1.ServiceAccount": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["secrets", "k8s.io.api.core.v1.ObjectReference", true],
    3: ["imagePullSecrets", "k8s.io.api.core.v1.LocalObjectReference", true],
    4: ["automountServiceAccountToken", "bool", false],
  },
  "k8s.io.api.rbac.v1.AggregationRule": {
    1: ["clusterRoleSelectors", "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector", true],
  },
  "k8s.io.api.rbac.v1.ClusterRole": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["rules", "k8s.io.api.rbac.v1.PolicyRule", true],
    3: ["aggregationRule", "k8s.io.api.rbac.v1.AggregationRule", false],
  },
  "k8s.io.api.rbac.v1.ClusterRoleBinding": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["subjects", "k8s.io.api.rbac.v1.Subject", true],
    3: ["roleRef", "k8s.io.api.rbac.v1.RoleRef", false],
  },
  "k8s.io.api.rbac.v1.PolicyRule": {
    1: ["verbs", "string", true],
    2: ["apiGroups", "string", true],
    3: ["resources", "string", true],
    4: ["resourceNames", "string", true],
    5: ["nonResourceURLs", "string", true],
  },
  "k8s.io.api.rbac.v1.Role": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["rules", "k8s.io.api.rbac.v1.PolicyRule", true],
  },
  "k8s.io.api.rbac.v1.RoleBinding": {
    1: ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", false],
    2: ["subjects", "k8s.io.api.rbac.v1.Subject", true],
    3: ["roleRef", "k8s.io.api.rbac.v1.RoleRef", false],
  },
  "k8s.io.api.rbac.v1.RoleRef": {
    1: ["apiGroup", "string", false],
    2: ["kind", "string", false],
    3: ["name", "string", false],
  },
  "k8s.io.api.rbac.v1.Subject": {
    1: ["kind", "string", false],
    2: ["apiGroup", "string", false],
    3: ["name", "string", false],
    4: ["namespace", "string", false],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement": {
    1: ["key", "string", false],
    2: ["operator", "string", false],
    3: ["values", "string", true],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector": {
    1: ["matchLabels", ["map", "string", "string"], false],
    2: ["matchExpressions", "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", true],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement": {
    1: ["key", "string", false],
    2: ["operator", "string", false],
    3: ["values", "string", true],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
    1: ["manager", "string", false],
    2: ["operation", "string", false],
    3: ["apiVersion", "string", false],
    4: ["time", "k8s.io.apimachinery.pkg.apis.meta.v1.Time", false],
    6: ["fieldsType", "string", false],
    7: ["fieldsV1", "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", false],
    8: ["subresource", "string", false],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    1: ["name", "string", false],
    2: ["generateName", "string", false],
    3: ["namespace", "string", false],
    4: ["selfLink", "string", false],
    5: ["uid", "string", false],
    6: ["resourceVersion", "string", false],
    7: ["generation", "int64", false],
    8: ["creationTimestamp", "k8s.io.apimachinery.pkg.apis.meta.v1.Time", false],
    9: ["deletionTimestamp", "k8s.io.apimachinery.pkg.apis.meta.v1.Time", false],
    10: ["deletionGracePeriodSeconds", "int64", false],
    11: ["labels", ["map", "string", "string"], false],
    12: ["annotations", ["map", "string", "string"], false],
    13: ["ownerReferences", "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference", true],
    14: ["finalizers", "string", true],
    17: ["managedFields", "k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry", true],
  },
  "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference": {
    1: ["kind", "string", false],
    3: ["name", "string", false],
    4: ["uid", "string", false],
    5: ["apiVersion", "string", false],
    6: ["controller", "bool", false],
    7: ["blockOwnerDeletion", "bool", false],
  },
};
