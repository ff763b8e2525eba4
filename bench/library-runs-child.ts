// One node process that runs N copies of the example at once through the library: runWorkflow on one API-transport Cluster shared by every run.
// Usage (by library-concurrency-bench.ts): node dist/bench/library-runs-child.js KUBECONFIG WORKDIR N
// Prints one JSON line when its modules are loaded and the cluster is open ({"ready":true}), waits for a line on
// stdin, then runs the N runs and prints one JSON line: each run's status and the wall time.
import { once } from "node:events";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openApiCluster } from "../src/cluster/api/open-api-cluster.js";
import { createNdjsonLogSink } from "../src/events/sinks.js";
import { parseStepsFile } from "../src/workflow/steps-file.js";
import { buildRunSettings } from "../src/settings/build-run-settings.js";
import { runWorkflow } from "../src/run/run-workflow.js";
import { REPO_ROOT } from "./runner-cli.js";

const [kubeconfig, workDir, countText] = process.argv.slice(2);
const count = Number(countText);
const example = join(REPO_ROOT, "examples", "hello");
const stepsFile = join(example, "steps.tsv");
const steps = parseStepsFile(readFileSync(stepsFile), stepsFile);
const cluster = await openApiCluster({ files: [kubeconfig!], explicit: true }, { env: process.env });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
await once(process.stdin, "data");
const started = performance.now();
const statuses = await Promise.all(
  Array.from({ length: count }, async (_, i) => {
    const runId = `lib-${count}-${i}`;
    const outDir = join(workDir!, runId);
    mkdirSync(outDir, { recursive: true });
    const settings = buildRunSettings({
      runId,
      target: { kubeconfig: kubeconfig!, namespaceFromContext: true },
      steps,
      checkoutDir: example,
      sharedStepsDir: join(REPO_ROOT, "examples", "shared-steps"),
      outDir,
      podTimeoutMs: 15 * 60_000,
      maxOutputBytes: 512 * 1024 * 1024,
      maxLogBytes: 64 * 1024 * 1024,
      claimWarm: false,
      hostTar: { binary: "tar", env: process.env },
    });
    // A daemon keeps each run's log: the NDJSON one, as serve writes it.
    const log = createNdjsonLogSink(join(outDir, "log.ndjson"));
    try {
      const result = await runWorkflow({ settings, cluster, signal: new AbortController().signal, sinks: [log.sink] });
      return result.status === "success" ? "success" : `${result.status}: ${result.error ?? "?"}`;
    } finally {
      await log.close();
    }
  }),
);
const wallMs = performance.now() - started;
await cluster.close();
process.stdout.write(`${JSON.stringify({ statuses, wallMs })}\n`);
