// The Lease holder: takes the instance's Lease, renews it at the version it wrote, survives a 409, releases it on a clean stop.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { ForbiddenError, NotFoundError } from "../../src/cluster/errors.js";
import { InfraError } from "../../src/core/errors.js";
import { readLeaseState } from "../../src/manifests/instance-lease.js";
import { LeaseHolder, deriveRenewIntervalMs } from "../../src/serve/lease-holder.js";
import { MemoryObjects } from "../support/memory-objects.js";
import { settle } from "../support/settle.js";

const NAME = "knotless-instance-a";

function makeHolder(objects: MemoryObjects, warnings: string[] = [], renewIntervalMs = 30): LeaseHolder {
  return new LeaseHolder({
    cluster: objects.cluster,
    namespace: "ci",
    instance: "a",
    durationSeconds: 1,
    renewIntervalMs,
    warn: (message) => warnings.push(message),
  });
}

describe("LeaseHolder", () => {
  it("creates the instance's Lease when there is none, held by the instance for the duration", async () => {
    const objects = new MemoryObjects();
    const holder = makeHolder(objects);
    await holder.acquire();
    const lease = objects.leases.get(NAME)!;
    assert.equal(lease.spec?.holderIdentity, "a");
    assert.equal(lease.spec?.leaseDurationSeconds, 1);
    assert.equal(lease.metadata?.labels?.["knotless.dev/instance"], "a");
    assert.equal(readLeaseState(lease, Date.now()).live, true);
    assert.equal(holder.held, true);
    await holder.release();
  });

  it("renews the Lease on its interval, each renewal at the resourceVersion it last wrote", async (t) => {
    // Mocked timers and clock: the renewals are counted per interval, whatever the machine's load.
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: Date.parse("2026-01-01T00:00:00Z") });
    const objects = new MemoryObjects();
    const holder = makeHolder(objects);
    await holder.acquire();
    const firstRenew = String(objects.leases.get(NAME)!.spec!.renewTime);
    t.mock.timers.tick(29);
    await settle();
    assert.equal(objects.cluster.callsTo("updateLease").length, 0, "no renewal before the 30 ms interval");
    for (let interval = 0; interval < 3; interval += 1) {
      t.mock.timers.tick(interval === 0 ? 1 : 30);
      await settle();
    }
    assert.equal(objects.cluster.callsTo("updateLease").length, 3, "one renewal per 30 ms interval");
    assert.notEqual(String(objects.leases.get(NAME)!.spec!.renewTime), firstRenew);
    assert.equal(
      objects.cluster.callsTo("getLease").length,
      1,
      "read once, at the start: renewals use what they wrote",
    );
    assert.equal(objects.leases.get(NAME)!.spec?.leaseTransitions, 0, "renewing its own live Lease is no transition");
    await holder.release();
  });

  it("expires when it is no longer renewed: live within the duration, not after it", async () => {
    const objects = new MemoryObjects();
    const other = makeHolder(objects, [], 60_000); // takes it once and never renews within the test
    await other.acquire();
    const lease = objects.leases.get(NAME)!;
    const renewedAt = Date.parse(String(lease.spec!.renewTime));
    assert.equal(readLeaseState(lease, renewedAt + 999).live, true);
    assert.equal(readLeaseState(lease, renewedAt + 1001).live, false);
    assert.equal(readLeaseState(lease, renewedAt + 1001).expiresAt, renewedAt + 1000);
    await other.release();
  });

  it("takes over its own expired Lease on a restart, counting one more transition", async () => {
    const objects = new MemoryObjects();
    const first = makeHolder(objects, [], 60_000);
    await first.acquire();
    objects.touchLease(NAME, (lease) => ({
      ...lease,
      spec: { ...lease.spec, renewTime: new Date(Date.now() - 5_000).toISOString() },
    }));
    const restarted = makeHolder(objects, [], 60_000);
    await restarted.acquire();
    const lease = objects.leases.get(NAME)!;
    assert.equal(lease.spec?.leaseTransitions, 1);
    assert.equal(readLeaseState(lease, Date.now()).live, true);
    await restarted.release();
  });

  it("after a 409 on a renewal reads the Lease again and renews it, telling of another writer", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: Date.parse("2026-01-01T00:00:00Z") });
    const objects = new MemoryObjects();
    const warnings: string[] = [];
    const holder = makeHolder(objects, warnings, 40);
    await holder.acquire();
    objects.touchLease(NAME, (lease) => lease); // someone else wrote it: the holder's version is stale
    t.mock.timers.tick(40);
    await settle();
    assert.equal(objects.cluster.callsTo("updateLease").length, 2, "the refused renewal, then the one after the read");
    assert.equal(objects.cluster.callsTo("getLease").length, 2, "read again after the conflict");
    assert.ok(
      warnings.some((w) => /changed by someone else/.test(w) && /--instance a/.test(w)),
      warnings.join("\n"),
    );
    assert.equal(readLeaseState(objects.leases.get(NAME)!, Date.now()).live, true);
    assert.equal(holder.held, true);
    await holder.release();
  });

  it("deletes the Lease on release, at the version it last wrote, and stops renewing", async () => {
    const objects = new MemoryObjects();
    const holder = makeHolder(objects);
    await holder.acquire();
    const version = objects.leases.get(NAME)!.metadata!.resourceVersion;
    await holder.release();
    assert.equal(objects.leases.has(NAME), false);
    const deletes = objects.cluster.callsTo("deleteLease");
    assert.equal(deletes.length, 1);
    assert.deepEqual((deletes[0]!.args[2] as { resourceVersion?: string }).resourceVersion, version);
    const updates = objects.cluster.callsTo("updateLease").length;
    await sleep(80);
    assert.equal(objects.cluster.callsTo("updateLease").length, updates, "no renewal after the release");
  });

  it("fails to start with an InfraError naming the Lease when the cluster refuses it", async () => {
    const objects = new MemoryObjects();
    objects.cluster.on("getLease", new ForbiddenError("leases.coordination.k8s.io is forbidden"));
    const holder = makeHolder(objects);
    await assert.rejects(holder.acquire(), (error: unknown) => {
      assert.ok(error instanceof InfraError);
      assert.match(error.message, /knotless-instance-a of instance a: .*forbidden/);
      return true;
    });
  });

  it("starts without the Lease when the cluster refuses it, says why, and takes it once the cluster allows", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: Date.parse("2026-01-01T00:00:00Z") });
    const objects = new MemoryObjects();
    const warnings: string[] = [];
    const readLease = (_ns: unknown, name: string) => objects.leases.get(name) ?? new NotFoundError("not found");
    objects.cluster.on("getLease", new ForbiddenError("leases.coordination.k8s.io is forbidden"), readLease);
    const holder = makeHolder(objects, warnings);
    try {
      assert.equal(await holder.acquireOrKeepTrying(), false);
      assert.equal(holder.held, false);
      assert.match(warnings.join("\n"), /knotless-instance-a of instance a: .*forbidden: serving without it for now/);
      t.mock.timers.tick(30); // the next try, one renewal interval later
      await settle();
      assert.equal(holder.held, true, "held once the cluster allows it");
      assert.equal(objects.leases.get(NAME)?.spec?.holderIdentity, "a");
    } finally {
      await holder.release();
    }
  });

  it("says when the Lease is held again after a lapse (regainedAt), and not for renewals within its duration or its first take", async () => {
    const objects = new MemoryObjects();
    const clock = { t: 1_000_000 };
    const holder = new LeaseHolder({
      cluster: objects.cluster,
      namespace: "ci",
      instance: "a",
      durationSeconds: 1,
      renewIntervalMs: 20,
      now: () => clock.t,
      warn: () => {},
    });
    try {
      await holder.acquire();
      assert.equal(holder.regainedAt, undefined);
      clock.t += 500;
      await sleep(80);
      assert.equal(holder.regainedAt, undefined, "renewed within its duration: no lapse");
      clock.t += 1500; // the renewals stalled longer than the duration (a GC pause, a partition)
      assert.equal(holder.held, false);
      for (let i = 0; i < 100 && !holder.held; i++) await sleep(10);
      assert.equal(holder.held, true);
      assert.equal(holder.regainedAt, clock.t);
    } finally {
      await holder.release();
    }
  });

  it("renews every third of the Lease's duration by default", () => {
    assert.equal(deriveRenewIntervalMs(15), 5_000);
    assert.equal(deriveRenewIntervalMs(3), 1_000);
  });
});
