// Prints the compiled test files for `npm test` (or, with --unit, `npm run test:unit`), longest first: `node --test`
// starts files in the order it is given them, so the longest end-to-end files start at once and the short ones fill
// the slots around them, instead of a long file starting last and running alone.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * The slowest files, longest first, by the sum of their top-level test durations in a full run (the 20:14 run of
 * December 7th, 2026 under load; see "How long the suite takes" in docs/testing.md). A file not listed runs after these: the other end-to-end and local-cluster files,
 * then the unit files. A stale order costs time, never correctness.
 */
const LONGEST_FIRST = [
  "e2e/serve-kubectl-on-local-cluster",
  "e2e/warm-capacity-on-local-cluster",
  "e2e/runner-on-local-cluster",
  "local-cluster/containers",
  "e2e/serve-api-on-local-cluster",
  "e2e/stage-cancel-on-local-cluster",
  "e2e/credentials-on-local-cluster",
  "e2e/reattach-on-local-cluster",
  "e2e/api-transport-on-local-cluster",
  "e2e/idle-guard-on-local-cluster",
  "e2e/workflow-with-fake-kubectl",
  "local-cluster/auth",
  "local-cluster/faults",
  "e2e/pod-controls-on-local-cluster",
  "e2e/services-on-local-cluster",
  "e2e/cache-workflow-on-local-cluster",
  "e2e/workflow-on-debian-image",
  "local-cluster/api",
  "e2e/kubectl-transport-on-local-cluster",
  "e2e/step-output-bound-on-local-cluster",
  "e2e/caches-on-local-cluster",
  "e2e/faults-with-fake-kubectl",
  "e2e/secrets-on-local-cluster",
  "e2e/operations-on-local-cluster",
  "local-cluster/claims",
  "e2e/tangled-workflows-on-local-cluster",
  "local-cluster/scale-from-zero",
  "e2e/cli-with-fake-kubectl",
  "local-cluster/cli",
  "scripts/live-proof",
  "local-cluster/sidecars",
  // The unit files with the longest walls, one at a time on the loaded machine (December 7th, 23:25; testing.md).
  "scripts/tenant-kubeconfig",
  "cluster/kubectl/kubectl-args-real-kubectl",
  "pod/keep-alive",
  "pod/helper-output-bound",
  "pod/helper-env",
  "serve/log-followers",
  "pod/cache-script",
  "fake-kubectl/faults",
  "fake-kubectl/lifecycle",
  "pod/helper-script",
  "fake-kubectl/exec",
  "cli/serve-drain-exit",
  "mill/mill-session",
  "cache/archive-gate-rules",
];

const root = join("dist", "test");

/** Every `*.test.js` under `dir`, as paths relative to `root` without the extension. */
function listTests(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listTests(path);
    return entry.name.endsWith(".test.js") ? [relative(root, path).slice(0, -".test.js".length)] : [];
  });
}

/** End-to-end and local-cluster files: they need podman or a real kubectl, and spend most of their time waiting. */
function isEndToEnd(name) {
  return name.startsWith("e2e/") || name.startsWith("local-cluster/") || name.includes("on-local-cluster");
}

/** `--unit`: only the files that need no container or cluster (`npm run test:unit`). */
const unitOnly = process.argv.includes("--unit");
const all = listTests(root).sort();
for (const name of LONGEST_FIRST.filter((listed) => !all.includes(listed)))
  process.stderr.write(`test-files: ${name} is in LONGEST_FIRST but not under ${root}: rename or remove it there\n`);
const rank = (name) => {
  const listed = LONGEST_FIRST.indexOf(name);
  if (listed >= 0) return listed;
  return LONGEST_FIRST.length + (isEndToEnd(name) ? 0 : 1);
};
const ordered = all
  .filter((name) => !unitOnly || !isEndToEnd(name))
  .map((name, index) => ({ name, index }))
  .sort((a, b) => rank(a.name) - rank(b.name) || a.index - b.index);
process.stdout.write(ordered.map(({ name }) => `${join(root, name)}.test.js\n`).join(""));
