// The fault configuration is validated strictly and each fault fires by pattern and count.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FaultInjector, parseFaultConfig } from "../../local-cluster/faults.js";

test("an unknown fault or field is refused with its path", () => {
  assert.throws(() => parseFaultConfig({ latncy: { ms: 1 } }), /invalid fault configuration/);
  assert.throws(() => parseFaultConfig({ latency: { ms: 1, extra: true } }), /latency/);
  assert.throws(() => parseFaultConfig({ execStreamCut: { mode: "error" } }), /afterSeconds or afterBytes/);
});

test("a fault with a count fires for the first N matching subjects only", () => {
  const f = new FaultInjector();
  f.set(parseFaultConfig({ createError: { count: 2, match: "^jobs " } }));
  assert.equal(f.take("createError", "pods ci/x"), undefined);
  assert.ok(f.take("createError", "jobs ci/a"));
  assert.ok(f.take("createError", "jobs ci/b"));
  assert.equal(f.take("createError", "jobs ci/c"), undefined);
  assert.deepEqual(
    f.history().map((h) => h.subject),
    ["jobs ci/a", "jobs ci/b"],
  );
});

test("setting faults again resets the counters", () => {
  const f = new FaultInjector();
  f.set(parseFaultConfig({ execUpgradeRefused: { count: 1 } }));
  assert.ok(f.take("execUpgradeRefused", "sh"));
  assert.equal(f.take("execUpgradeRefused", "sh"), undefined);
  f.set(parseFaultConfig({ execUpgradeRefused: { count: 1 } }));
  assert.ok(f.take("execUpgradeRefused", "sh"));
});
