// Describes the machine a benchmark ran on: CPUs, memory, kernel, node, tar and the fake kubectl.
import { execFileSync } from "node:child_process";
import { availableParallelism, cpus, loadavg, release, totalmem } from "node:os";

export interface MachineInfo {
  readonly date: string;
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly tar: string;
  readonly kubectl: string;
  readonly commit: string;
  /** 1, 5 and 15 minute load averages when the benchmark started (the machine may be shared). */
  readonly loadAverage: readonly number[];
  readonly scratch?: string;
}

function readCommandLine(command: string, args: readonly string[]): string {
  try {
    return (
      execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
        .split("\n")[0]
        ?.trim() ?? ""
    );
  } catch {
    return "unknown";
  }
}

export function describeMachine(): MachineInfo {
  return {
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel: release(),
    node: process.version,
    tar: readCommandLine("tar", ["--version"]),
    kubectl:
      "the fake kubectl of test/fixtures/bin/kubectl (a node program; pods are bubblewrap sandboxes entered with nsenter per exec)",
    commit: readCommandLine("git", ["rev-parse", "--short", "HEAD"]),
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}
