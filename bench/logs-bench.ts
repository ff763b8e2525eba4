// Benchmark 3: what the logs cost a step that prints a lot of short lines: run.log and log.ndjson against the output's own size.
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FakeCluster } from "../test/fixtures/fake-kubectl/harness.js";
import { buildRunnerArgs, readPhaseSpans, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";

/** A typical short line of build output, 37 bytes with its newline: 300 MB of such lines made the 632 MB run.log. */
export const SHORT_LINE = "  CC      src/net/http-client.o   ok";

export interface LogsCase {
  readonly label: string;
  /** Bytes the step prints: SHORT_LINE over and over, cut at this size. */
  readonly bytes: number;
  /** The --max-log-bytes given to the runner; undefined: its default. */
  readonly maxLogBytes?: string;
}

export interface LogsMeasurement {
  readonly case: LogsCase;
  readonly runLogBytes: number;
  readonly ndjsonBytes: number;
  /** What result.json's logs says: the step output kept and left out. */
  readonly logs: { readonly limitBytes: number; readonly keptBytes: number; readonly droppedBytes: number };
  /** The step's duration as the runner reports it, and the whole run's wall time. */
  readonly stepMs: number;
  readonly wallMs: number;
  readonly command: string;
}

const MB = 1_000_000;

/** The cases measured: the 300 MB with nothing cut (what the format costs), then the same under the default limit. */
export function listLogsCases(quick: boolean): LogsCase[] {
  const bytes = quick ? 30 * MB : 300 * MB;
  return [
    {
      label: `${bytes / MB} MB of ${SHORT_LINE.length + 1}-byte lines, nothing cut (--max-log-bytes 1G)`,
      bytes,
      maxLogBytes: "1G",
    },
    // Cut by the budget: the default limit (64Mi), or a limit below the quick size.
    quick
      ? {
          label: `${bytes / MB} MB of ${SHORT_LINE.length + 1}-byte lines, cut at --max-log-bytes 8Mi`,
          bytes,
          maxLogBytes: "8Mi",
        }
      : {
          label: `${bytes / MB} MB of ${SHORT_LINE.length + 1}-byte lines, cut at the default --max-log-bytes (64Mi)`,
          bytes,
        },
  ];
}

/** Runs each case once through the CLI and the fake kubectl, and measures the two log files it leaves. */
export async function runLogsBench(
  cluster: FakeCluster,
  workDir: string,
  cases: readonly LogsCase[],
  log: (line: string) => void,
): Promise<LogsMeasurement[]> {
  await cluster.setFaults({});
  const checkoutDir = join(workDir, "checkout");
  await mkdir(checkoutDir, { recursive: true });
  await writeFile(join(checkoutDir, "README.md"), "# logs bench\n");
  const measurements: LogsMeasurement[] = [];
  for (const [index, logsCase] of cases.entries()) {
    const stepsFile = join(workDir, `steps-${index}.tsv`);
    await writeFile(stepsFile, `print\tyes '${SHORT_LINE}' | head -c ${logsCase.bytes}\n`);
    const invocation: RunnerInvocation = {
      checkoutDir,
      stepsFile,
      outDir: join(workDir, `out-${index}`),
      kubectlPath: cluster.kubectlPath,
      kubeconfigPath: cluster.kubeconfigPath,
      runId: `logs-${index}`,
      ...(logsCase.maxLogBytes ? { extraArgs: ["--max-log-bytes", logsCase.maxLogBytes] } : {}),
    };
    log(`logs: ${logsCase.label}`);
    const timed = await runRunnerTimed(invocation, { ...cluster.env });
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
      logs?: LogsMeasurement["logs"];
    };
    const spans = await readPhaseSpans(invocation.outDir);
    measurements.push({
      case: logsCase,
      runLogBytes: (await stat(join(invocation.outDir, "run.log"))).size,
      ndjsonBytes: (await stat(join(invocation.outDir, "log.ndjson"))).size,
      logs: result.logs ?? { limitBytes: Number.NaN, keptBytes: Number.NaN, droppedBytes: Number.NaN },
      stepMs: spans["step:print"]?.durationMs ?? Number.NaN,
      wallMs: timed.wallMs,
      command: `node ${buildRunnerArgs(invocation).join(" ")}`,
    });
  }
  return measurements;
}

/** The markdown section: sizes against the output the logs hold, per case. */
export function renderLogs(measurements: readonly LogsMeasurement[]): string[] {
  const ratio = (bytes: number, of: number): string => `${((bytes / of - 1) * 100).toFixed(1)} %`;
  return [
    "### Logs of a step printing short lines",
    "",
    `One step prints \`yes '${SHORT_LINE}' | head -c N\` (${SHORT_LINE.length + 1}-byte lines) through the fake kubectl; the runner's console output goes to a pipe the bench drains. "over kept" is each file's size over the step output it holds (result.json's \`logs.keptBytes\`): what the file's framing costs.`,
    "",
    "| case | kept / dropped bytes | run.log bytes (over kept) | log.ndjson bytes (over kept) | step ms | run wall ms |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...measurements.map(
      (m) =>
        `| ${m.case.label} | ${m.logs.keptBytes} / ${m.logs.droppedBytes} | ${m.runLogBytes} (${ratio(m.runLogBytes, m.logs.keptBytes)}) | ${m.ndjsonBytes} (${ratio(m.ndjsonBytes, m.logs.keptBytes)}) | ${m.stepMs} | ${m.wallMs.toFixed(0)} |`,
    ),
    "",
    ...measurements.map((m) => `- ${m.case.label}: \`${m.command}\``),
  ];
}
