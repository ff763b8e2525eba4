// Kubernetes protobuf request bodies decode into the JSON shape the handlers read, by the field tables.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeProtobufBody, findMessageName, PROTOBUF_MAGIC } from "../../local-cluster/protobuf-body.js";
import { ProtobufError } from "../../local-cluster/protobuf-wire.js";

/** A tiny protobuf writer for the tests: a message is a list of already-encoded fields. */
function varint(value: number | bigint): Buffer {
  let v = BigInt(value);
  if (v < 0n) v = BigInt.asUintN(64, v);
  const bytes: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    bytes.push(byte);
  } while (v > 0n);
  return Buffer.from(bytes);
}
const str = (n: number, s: string): Buffer => bytes(n, Buffer.from(s, "utf8"));
const bytes = (n: number, b: Buffer): Buffer => Buffer.concat([varint((n << 3) | 2), varint(b.length), b]);
const msg = (n: number, ...fields: Buffer[]): Buffer => bytes(n, Buffer.concat(fields));
const int = (n: number, v: number | bigint): Buffer => Buffer.concat([varint(n << 3), varint(v)]);

function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  return Buffer.concat([
    PROTOBUF_MAGIC,
    msg(1, str(1, apiVersion), str(2, kind)),
    bytes(2, raw),
    str(3, ""),
    str(4, ""),
  ]);
}

describe("decodeProtobufBody", () => {
  it("decodes a SelfSubjectAccessReview, as kubectl 1.33's auth can-i sends it, leaving out the empty strings", () => {
    const spec = msg(
      2,
      msg(1, str(1, "ci"), str(2, "create"), str(3, "batch"), str(4, ""), str(5, "jobs"), str(6, ""), str(7, "")),
    );
    const body = envelope(
      "authorization.k8s.io/v1",
      "SelfSubjectAccessReview",
      Buffer.concat([msg(1, str(1, ""), str(3, "")), spec, msg(3, int(1, 0), str(2, ""))]),
    );
    assert.deepEqual(decodeProtobufBody(body), {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      metadata: {},
      spec: { resourceAttributes: { namespace: "ci", verb: "create", group: "batch", resource: "jobs" } },
      status: { allowed: false },
    });
  });

  it("decodes repeated strings, maps and times of a Role", () => {
    const meta = msg(
      1,
      str(1, "runner"),
      str(3, "ci"),
      msg(8, int(1, 1_764_547_200)),
      msg(11, str(1, "app"), str(2, "knotless")),
      msg(11, str(1, "tier"), str(2, "ci")),
    );
    const rule = (verbs: string[], resource: string): Buffer =>
      msg(2, ...verbs.map((v) => str(1, v)), str(2, "batch"), str(3, resource));
    const body = envelope(
      "rbac.authorization.k8s.io/v1",
      "Role",
      Buffer.concat([meta, rule(["get", "list"], "jobs"), rule(["create"], "jobs")]),
    );
    assert.deepEqual(decodeProtobufBody(body), {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: {
        name: "runner",
        namespace: "ci",
        creationTimestamp: "2025-12-01T00:00:00Z",
        labels: { app: "knotless", tier: "ci" },
      },
      rules: [
        { verbs: ["get", "list"], apiGroups: ["batch"], resources: ["jobs"] },
        { verbs: ["create"], apiGroups: ["batch"], resources: ["jobs"] },
      ],
    });
  });

  it("decodes int64 and bools, and a zero time as absent", () => {
    const body = envelope(
      "authentication.k8s.io/v1",
      "TokenRequest",
      Buffer.concat([
        msg(1, str(1, "runner"), msg(8, int(1, 0), int(2, 0))),
        msg(2, str(1, "https://example"), int(4, 86_400)),
      ]),
    );
    assert.deepEqual(decodeProtobufBody(body), {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: { name: "runner" },
      spec: { audiences: ["https://example"], expirationSeconds: 86_400 },
    });
    const account = envelope("v1", "ServiceAccount", Buffer.concat([msg(1, str(1, "sa")), int(4, 0)]));
    assert.deepEqual(decodeProtobufBody(account), {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "sa" },
      automountServiceAccountToken: false,
    });
  });

  it("turns a map of ExtraValue into lists and renames uID to uid", () => {
    const extra = msg(5, str(1, "scopes"), msg(2, str(1, "a"), str(1, "b")));
    const sar = envelope(
      "authorization.k8s.io/v1",
      "SubjectAccessReview",
      msg(2, str(3, "alice"), str(4, "devs"), extra, str(6, "u-1")),
    );
    assert.deepEqual((decodeProtobufBody(sar) as { spec: unknown }).spec, {
      user: "alice",
      groups: ["devs"],
      extra: { scopes: ["a", "b"] },
      uid: "u-1",
    });
    const bound = envelope("authentication.k8s.io/v1", "TokenRequest", msg(2, msg(3, str(1, "Pod"), str(4, "abc"))));
    assert.deepEqual((decodeProtobufBody(bound) as { spec: unknown }).spec, {
      boundObjectRef: { kind: "Pod", uid: "abc" },
    });
  });

  it("skips field numbers it has no table entry for", () => {
    const body = envelope("v1", "ServiceAccount", Buffer.concat([msg(1, str(1, "sa"), str(99, "future")), int(50, 7)]));
    assert.deepEqual(decodeProtobufBody(body), { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "sa" } });
  });

  it("returns undefined for a kind without a field table, and throws on a malformed body", () => {
    assert.equal(decodeProtobufBody(envelope("v1", "Secret", msg(1, str(1, "s")))), undefined);
    assert.throws(() => decodeProtobufBody(Buffer.from("{}")), ProtobufError);
    const truncated = envelope("v1", "ServiceAccount", msg(1, str(1, "sa")));
    assert.throws(() => decodeProtobufBody(truncated.subarray(0, truncated.length - 1)), ProtobufError);
  });

  it("names the proto message of each served group's kinds", () => {
    assert.equal(findMessageName("v1", "ServiceAccount"), "k8s.io.api.core.v1.ServiceAccount");
    assert.equal(findMessageName("rbac.authorization.k8s.io/v1", "RoleBinding"), "k8s.io.api.rbac.v1.RoleBinding");
    assert.equal(
      findMessageName("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
      "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
    );
    assert.equal(findMessageName("apps/v1", "Deployment"), undefined);
  });
});
