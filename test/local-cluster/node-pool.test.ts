// The scale-from-zero mode's pure parts: quantities, what counts as demand, and its configuration.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkScaleFromZero, countDemand, parseJoinHold } from "../../local-cluster/node-pool.js";
import { parseQuantity, sumPodRequests } from "../../local-cluster/quantity.js";
import type { KubeObject } from "../../local-cluster/types.js";

const object = (fields: Partial<KubeObject>): KubeObject => ({
  apiVersion: "v1",
  kind: "X",
  metadata: { name: "x", uid: "u", resourceVersion: "1", creationTimestamp: "" },
  ...fields,
});

describe("the scale-from-zero mode", () => {
  it("reads cpu and memory quantities in cores and bytes", () => {
    assert.equal(parseQuantity("500m"), 0.5);
    assert.equal(parseQuantity("2"), 2);
    assert.equal(parseQuantity("512Mi"), 512 * 2 ** 20);
    assert.equal(parseQuantity("1G"), 1e9);
    assert.equal(parseQuantity("1e3"), 1000);
    assert.equal(parseQuantity("lots"), undefined);
    assert.deepEqual(
      sumPodRequests({ containers: [{ resources: { requests: { cpu: "250m", memory: "1Gi" } } }, {}] }),
      { cpu: 0.25, memory: 2 ** 30 },
    );
  });

  it("counts pods that have not finished and Jobs without completionTime that are not suspended as demand", () => {
    const pods = [
      object({ status: { phase: "Running" } }),
      object({ status: { phase: "Pending" } }),
      object({ status: { phase: "Succeeded" } }),
      object({ status: { phase: "Failed" } }),
    ];
    const jobs = [
      object({ status: {} }),
      object({ status: { completionTime: "2026-01-01T00:00:00Z" } }),
      object({ spec: { suspend: true }, status: {} }),
      object({ status: { conditions: [{ type: "Failed", status: "True" }] } }),
    ];
    assert.equal(
      countDemand(pods, jobs),
      2 + 2,
      "two live pods, the running Job and the failed one (a failed Job has no completionTime)",
    );
    assert.equal(countDemand([pods[2]!], [jobs[1]!, jobs[2]!]), 0);
  });

  it("reads JOIN:HOLD and refuses anything else", () => {
    assert.deepEqual(parseJoinHold("30:120"), { joinSeconds: 30, holdSeconds: 120 });
    assert.deepEqual(parseJoinHold("0.5:2"), { joinSeconds: 0.5, holdSeconds: 2 });
    assert.throws(() => parseJoinHold("30"), /JOIN:HOLD/);
    assert.throws(() => parseJoinHold("-1:2"), /JOIN:HOLD/);
  });

  it("defaults each node to 2 cpu and 4Gi and refuses a capacity that is not a positive quantity", () => {
    assert.deepEqual(checkScaleFromZero({ joinSeconds: 1, holdSeconds: 1 }), {
      joinSeconds: 1,
      holdSeconds: 1,
      nodeCpu: "2",
      nodeMemory: "4Gi",
      maxNodes: 10,
    });
    assert.throws(() => checkScaleFromZero({ joinSeconds: 1, holdSeconds: 1, nodeCpu: "0" }), /nodeCpu/);
    assert.throws(() => checkScaleFromZero({ joinSeconds: -1, holdSeconds: 1 }), /joinSeconds/);
  });
});
