import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildProgram } from "../../src/cli/main.js";
import type { RawRunOptions } from "../../src/cli/resolve-run-command.js";
import { parseRunFast } from "../../src/cli/run-options.js";

/** What commander hands the run action for this command line (undefined when it refuses it). */
async function parseWithCommander(argv: readonly string[]): Promise<RawRunOptions | undefined> {
  let parsed: RawRunOptions | undefined;
  const program = await buildProgram(
    async (_command, options) => ((parsed = { ...options } as unknown as RawRunOptions), 0),
  );
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch {
    return undefined;
  }
  return parsed;
}

const REQUIRED = ["--checkout", "/c", "--steps", "/s.tsv", "--out", "/o"];

describe("parseRunFast", () => {
  const plain: string[][] = [
    ["run", ...REQUIRED],
    ["run", "--checkout=/c", "--steps=/s.tsv", "--out=/o"],
    [
      "run",
      ...REQUIRED,
      "--image",
      "alpine:3.20",
      "--namespace",
      "ci",
      "--kubeconfig",
      "/k",
      "--context",
      "ctx",
      "--kubectl",
      "/bin/k",
    ],
    [
      "run",
      ...REQUIRED,
      "--run-id",
      "42",
      "--timeout",
      "90s",
      "--step-timeout",
      "10m",
      "--pod-timeout",
      "1m",
      "--cpu",
      "1",
      "--memory",
      "1Gi",
    ],
    ["run", ...REQUIRED, "--max-output-bytes", "1G", "--shared-steps", "/shared", "--keep", "--dry-run", "--verbose"],
    ["run", "--out", "/o", "--steps", "/s.tsv", "--checkout", "/c", "--image", "a", "--image", "b"],
    ["run", ...REQUIRED, "--checkout", "-", "--image="],
    [
      "run",
      ...REQUIRED,
      "--no-cache",
      "--cache-dir",
      "/var/cache/k",
      "--cache-max-bytes=1Gi",
      "--cache-pvc",
      "ci-cache",
    ],
    [
      "run",
      ...REQUIRED,
      "--node-selector",
      "pool=ci",
      "--node-selector=zone=a",
      "--toleration",
      "dedicated=ci:NoSchedule",
      "--priority-class",
      "ci-low",
      "--runtime-class",
      "gvisor",
      "--image-pull-secret",
      "r1",
      "--pod-label",
      "team=x",
      "--pod-annotation",
      "a=b",
      "--security-profile",
      "restricted",
      "--ephemeral-storage",
      "1Gi:2Gi",
    ],
  ];
  for (const argv of plain) {
    it(`reads \`${argv.slice(1).join(" ")}\` exactly as commander does`, async () => {
      const fast = parseRunFast(argv);
      assert.ok(fast, "the fast path took it");
      assert.deepEqual(fast, await parseWithCommander(argv));
    });
  }

  const unusual: string[][] = [
    [],
    ["--help"],
    ["run", "--help"],
    ["help", "run"],
    ["run", "--checkout", "/c", "--steps", "/s.tsv"],
    ["run", ...REQUIRED, "--no-such-flag"],
    ["run", ...REQUIRED, "extra"],
    ["run", ...REQUIRED, "--keep=yes"],
    ["run", ...REQUIRED, "--no-cache=yes"],
    ["run", ...REQUIRED, "--image", "--keep"],
    ["run", ...REQUIRED, "--"],
    ["run", ...REQUIRED, "-h"],
  ];
  it("reads --no-cache as commander reads a negatable flag: cache false when given, true when not", () => {
    assert.equal(parseRunFast(["run", ...REQUIRED, "--no-cache"])?.cache, false);
    assert.equal(parseRunFast(["run", ...REQUIRED])?.cache, true);
  });

  for (const argv of unusual) {
    it(`leaves \`${argv.join(" ")}\` to commander`, () => assert.equal(parseRunFast(argv), undefined));
  }
});
