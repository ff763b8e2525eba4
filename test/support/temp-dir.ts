// Temp dirs for tests, removed when the test process exits (node's runner gives each test file its own process).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dirs = new Set<string>();

/** A new directory under the OS temp dir, named `prefix` plus random characters; gone after the process exits. */
export function makeTestTempDir(prefix: string): string {
  // scripts/stress-faults.sh keeps them (E2E_KEEP_TEMP=1) to read each run's run.log after the test process ends.
  if (dirs.size === 0 && process.env.E2E_KEEP_TEMP !== "1")
    process.on("exit", () => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}
