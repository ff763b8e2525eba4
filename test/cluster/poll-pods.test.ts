// The kubectl transport's pod watch: repeated lists turned into watch events, transient failures retried, refusals final.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { WatchEvent } from "../../src/cluster/cluster.js";
import { ForbiddenError, UnavailableError } from "../../src/cluster/errors.js";
import { pollPods } from "../../src/cluster/poll-pods.js";

const pod = (name: string, phase: "Pending" | "Running"): IPod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  status: { phase },
});

describe("pollPods", () => {
  it("delivers what changed between two lists as ADDED, MODIFIED and DELETED, synced after each list, until aborted", async () => {
    const lists = [
      [pod("a", "Pending")],
      [pod("a", "Pending")],
      [pod("a", "Running"), pod("b", "Pending")],
      [pod("b", "Pending")],
    ];
    const controller = new AbortController();
    const seen: string[] = [];
    let reads = 0;
    await pollPods(
      async () => {
        reads += 1;
        if (reads === lists.length) setImmediate(() => controller.abort());
        return lists[Math.min(reads, lists.length) - 1]!;
      },
      {
        signal: controller.signal,
        pollMs: [1],
        onEvent: (e: WatchEvent<IPod>) => seen.push(`${e.type} ${e.object.metadata?.name} ${e.object.status?.phase}`),
        onSynced: () => seen.push("synced"),
      },
    );
    assert.deepEqual(seen, [
      "ADDED a Pending",
      "synced",
      "synced",
      "MODIFIED a Running",
      "ADDED b Pending",
      "synced",
      "DELETED a Running",
      "synced",
    ]);
    assert.equal(reads, 4);
  });

  it("reports a failed read worth another to onRetry and goes on; rejects a refusal at once", async () => {
    const retried: unknown[] = [];
    const controller = new AbortController();
    let reads = 0;
    await pollPods(
      async () => {
        reads += 1;
        if (reads <= 2) throw new UnavailableError("unreachable", "Unable to connect to the server");
        setImmediate(() => controller.abort());
        return [];
      },
      { signal: controller.signal, pollMs: [1], onEvent: () => undefined, onRetry: (error) => retried.push(error) },
    );
    assert.equal(retried.length, 2);
    assert.ok(retried.every((error) => error instanceof UnavailableError));
    await assert.rejects(
      pollPods(async () => Promise.reject(new ForbiddenError("pods is forbidden")), {
        pollMs: [1],
        onEvent: () => undefined,
      }),
      ForbiddenError,
    );
  });

  it("waits the schedule's intervals between reads, the last one repeated", async () => {
    const at: number[] = [];
    const controller = new AbortController();
    await pollPods(
      async () => {
        at.push(Date.now());
        if (at.length === 4) controller.abort();
        return [];
      },
      { signal: controller.signal, pollMs: [10, 60], onEvent: () => undefined },
    );
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    assert.ok(gaps[0]! >= 9 && gaps[1]! >= 59 && gaps[2]! >= 59, gaps.join(", "));
  });
});
