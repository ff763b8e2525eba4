import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildJobManifest } from "../../src/manifests/manifest.js";
import {
  listFreeSlotNames,
  orderClaimCandidates,
  readPlaceholder,
  readPlaceholderList,
} from "../../src/warm/placeholder.js";
import { jobList, placeholderJob, STARTED_AT } from "./placeholder-jobs.js";

const at = (seconds: number): number => STARTED_AT + seconds * 1000;

describe("a placeholder read from its Job", () => {
  it("has its size, identity and the time left before its deadline, counted from the Job's start", () => {
    const p = readPlaceholder(placeholderJob({ seconds: 120 }), at(30));
    assert.deepEqual(p, {
      namespace: "ci",
      name: "knotless-warm-0",
      uid: "uid-knotless-warm-0",
      resourceVersion: "10",
      cpu: "500m",
      memory: "512Mi",
      seconds: 120,
      expiresAt: at(120),
      remainingMs: 90_000,
      state: "held",
    });
  });

  it("says whether its pod holds a node, waits for one, has run out of time, has ended or is being deleted", () => {
    assert.equal(readPlaceholder(placeholderJob({ ready: false }), at(1))?.state, "pending");
    assert.equal(readPlaceholder(placeholderJob(), at(121))?.state, "expired");
    assert.equal(readPlaceholder(placeholderJob({ ended: "Failed" }), at(121))?.state, "finished");
    assert.equal(readPlaceholder(placeholderJob({ deleting: true }), at(1))?.state, "deleting");
  });

  it("is not read from a run's Job or from a list that is not one", () => {
    const run = buildJobManifest({
      jobName: "knotless-run-1",
      runId: "1",
      runIdLabel: "1",
      image: "busybox:1.36",
      cpu: "500m",
      memory: "512Mi",
      budgetSeconds: 60,
      createToken: "t",
    });
    assert.equal(
      readPlaceholder(
        { ...run, metadata: { ...run.metadata, namespace: "ci", uid: "u", resourceVersion: "1" } },
        at(0),
      ),
      undefined,
    );
    assert.deepEqual(
      readPlaceholderList(jobList(placeholderJob(), run), at(0)).map((p) => p.name),
      ["knotless-warm-0"],
    );
    assert.throws(() => readPlaceholderList("{}", at(0)), /no list of Jobs/);
  });
});

describe("choosing a placeholder to claim", () => {
  const request = { cpu: "500m", memory: "512Mi" };

  it("takes only live ones whose requests cover the run's: holding a node first, then the least oversized, then the longest left", () => {
    const list = readPlaceholderList(
      jobList(
        placeholderJob({ name: "knotless-warm-0", cpu: "2", memory: "1Gi" }),
        placeholderJob({ name: "knotless-warm-1", cpu: "500m", ready: false }),
        placeholderJob({ name: "knotless-warm-2", cpu: "1" }),
        placeholderJob({ name: "knotless-warm-3", cpu: "250m" }),
        placeholderJob({ name: "knotless-warm-4", memory: "256Mi" }),
        placeholderJob({ name: "knotless-warm-5", ended: "Failed" }),
        placeholderJob({ name: "knotless-warm-6", deleting: true }),
        placeholderJob({ name: "knotless-warm-7", cpu: "1", seconds: 600 }),
      ),
      at(60),
    );
    assert.deepEqual(
      orderClaimCandidates(list, request).map((p) => p.name),
      ["knotless-warm-7", "knotless-warm-2", "knotless-warm-0", "knotless-warm-1"],
    );
  });

  it("leaves out one whose deadline has passed", () => {
    assert.deepEqual(
      orderClaimCandidates(readPlaceholderList(jobList(placeholderJob({ seconds: 60 })), at(61)), request),
      [],
    );
  });
});

describe("slots", () => {
  it("are the names knotless-warm-0 to knotless-warm-<max-1> that no placeholder uses, whatever its state", () => {
    const list = readPlaceholderList(
      jobList(
        placeholderJob({ name: "knotless-warm-1", ended: "Failed" }),
        placeholderJob({ name: "knotless-warm-7" }),
      ),
      at(0),
    );
    assert.deepEqual(listFreeSlotNames(list, 3), ["knotless-warm-0", "knotless-warm-2"]);
    assert.deepEqual(listFreeSlotNames([], 1), ["knotless-warm-0"]);
  });
});
