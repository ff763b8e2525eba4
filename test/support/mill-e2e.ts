// What the mill executor's end-to-end tests share: offers of microvm workflows on the local busybox, and the `executor` command as its own process.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./run-cli.js";

const CLI = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");
export const BUSYBOX = "docker.io/library/busybox:1.36";
export const SHA = "c0ffee".padEnd(40, "0");
export const PIPELINE = JSON.stringify({
  triggerMetadata: {
    kind: "push",
    repo: { knot: "knot.example.org", did: "did:plc:abc", repo: "core", defaultBranch: "main" },
    push: { ref: "refs/heads/main", oldSha: "0".repeat(40), newSha: SHA },
  },
  workflows: [],
});

/** A ReserveSeat for a microvm workflow on the local busybox, without a clone. */
export function offer(leaseId: string, steps: string, extra: { engine?: string; image?: string } = {}) {
  const raw = `engine: microvm\nimage: ${extra.image ?? "alpine"}\nsteps:\n${steps}`;
  return {
    leaseId,
    targetEngine: extra.engine ?? "microvm",
    rawPipelineJson: PIPELINE,
    rawWorkflowJson: JSON.stringify({ name: "ci.yml", engine: "microvm", clone: { skip: true }, raw }),
    knot: "knot.example.org",
    rkey: "3kxmill",
  };
}

/** One step of a workflow's YAML `steps:` list. */
export const step = (name: string, command: string) => `  - name: ${name}\n    command: ${JSON.stringify(command)}\n`;

export interface ExecutorProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

/** Starts `executor` with short test timings; resolves once it says it is dialling. */
export function startExecutor(args: readonly string[]): Promise<ExecutorProcess> {
  const timings = JSON.stringify({ snapshotMs: 1_000, backoffMinMs: 200, backoffMaxMs: 1_000, cancelGraceMs: 4_000 });
  const child = spawn(process.execPath, [CLI, "executor", ...args], {
    env: { ...process.env, KNOTLESS_MILL_TIMINGS: timings },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      output += text;
      if (/dialling/.test(output)) resolve({ child, output: () => output, exited });
    });
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
    void exited.then((code) => reject(new Error(`executor exited ${code} before dialling: ${output}`)));
  });
}
