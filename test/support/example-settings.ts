// Builds executor settings for tests without touching the file system.
import type { RunSettings } from "../../src/executor/kubernetes/context.js";

export function exampleSettings(options: { steps: readonly string[]; sharedSteps?: boolean }): RunSettings {
  return {
    runId: "42",
    jobName: "knotless-run-42",
    runIdLabel: "42",
    target: { kubeconfig: "/tmp/kubeconfig", context: "ctx", namespace: "ci" },
    image: "busybox:1.36",
    cpu: "500m",
    memory: "512Mi",
    steps: options.steps.map((name, index) => ({ name, script: `echo ${name}`, source: `steps.tsv:${index + 1}` })),
    env: [{ name: "CI", value: "true" }],
    checkoutDir: "/tmp/checkout",
    ...(options.sharedSteps ? { sharedStepsDir: "/tmp/shared" } : {}),
    outDir: "/tmp/out",
    timeoutMs: 3_600_000,
    podTimeoutMs: 900_000,
    maxOutputBytes: 1 << 20,
    keep: false,
  };
}
