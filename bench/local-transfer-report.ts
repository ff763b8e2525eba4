// Renders the local-cluster transfer benchmark (api vs kubectl transport vs plain tar) as markdown.
import { loadavg } from "node:os";
import {
  PLAIN_SCRIPTS,
  summarizeLocalTransfer,
  TRANSPORTS,
  type LocalTransferResult,
  type PlainName,
} from "./local-transfer-bench.js";
import { formatSummary, type Summary } from "./stats.js";

const MIB = 1024 * 1024;

function describeThroughput(bytes: number, summary: Summary): string {
  return `${(bytes / MIB / (summary.median / 1000)).toFixed(1)} MiB/s`;
}

const PLAIN_LABELS: Record<PlainName, string> = {
  podmanUpload: "plain tar, podman exec (floor), upload",
  podmanDownload: "plain tar, podman exec (floor), download",
  kubectlUpload: "plain tar, kubectl exec, upload",
  kubectlDownload: "plain tar, kubectl exec, download",
};

/** One section per size: every repetition, the medians with throughput, and the api / kubectl verdict. */
export function renderLocalTransferReport(
  results: readonly LocalTransferResult[],
  argv: readonly string[],
  loadAtStart: readonly number[],
): string {
  const lines = ["## Big transfer on the local cluster: api transport, kubectl transport, plain tar", ""];
  lines.push(
    `- load average at the start: ${loadAtStart.map((l) => l.toFixed(2)).join(", ")}; at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
  );
  lines.push(`- command: \`npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}\``, "");
  for (const result of results) {
    const { bytes } = result.checkout;
    const v = summarizeLocalTransfer(result);
    lines.push(
      `### ${result.size.label} (${result.checkout.files} files, ${result.checkout.dirs} dirs, ${bytes} bytes)`,
      "",
    );
    lines.push(
      `- runner: \`${result.runnerCommand}\` (and \`--transport kubectl\`), one step \`cp -a /work/. /outputs/\`; upload = scan + upload phases, download = the download phase (log.ndjson)`,
    );
    for (const name of Object.keys(PLAIN_SCRIPTS) as PlainName[])
      lines.push(`- ${PLAIN_LABELS[name]}: \`${PLAIN_SCRIPTS[name].split("\n").at(-1)}\``);
    lines.push(
      "",
      "| rep | transport | upload ms | download ms | wall s | CPU s (with children) | peak RSS with children MiB | runner alone MiB | children |",
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    );
    result.runs.forEach((r, i) =>
      lines.push(
        `| ${Math.floor(i / 2) + 1} | ${r.transport} | ${r.uploadMs} | ${r.downloadMs} | ${(r.wallMs / 1000).toFixed(1)} | ${(r.cpuMs / 1000).toFixed(1)} | ${(r.peakTreeKiB / 1024).toFixed(1)} | ${(r.peakRunnerKiB / 1024).toFixed(1)} | ${Object.entries(
          r.children,
        )
          .map(([n, c]) => `${n} ×${c}`)
          .join(", ")} |`,
      ),
    );
    lines.push("");
    for (const transport of TRANSPORTS) {
      lines.push(
        `- ${transport}: upload ${formatSummary(v.upload[transport], "ms")} = ${describeThroughput(bytes, v.upload[transport])}; download ${formatSummary(v.download[transport], "ms")} = ${describeThroughput(bytes, v.download[transport])}; peak RSS ${formatSummary(v.peakTreeMiB[transport], "MiB", 1)}; CPU of the whole run with children ${formatSummary(v.cpuS[transport], "s", 1)}`,
      );
    }
    for (const name of Object.keys(PLAIN_SCRIPTS) as PlainName[])
      lines.push(
        `- ${PLAIN_LABELS[name]}: ${formatSummary(v.plain[name], "ms")} = ${describeThroughput(bytes, v.plain[name])}`,
      );
    const up = v.upload.kubectl.median / v.upload.api.median;
    const down = v.download.kubectl.median / v.download.api.median;
    lines.push(
      `- **api throughput / kubectl throughput: upload ${up.toFixed(2)}x, download ${down.toFixed(2)}x (target ≥ 1x: ${up >= 1 && down >= 1 ? "MET" : "MISSED"})**`,
      `- of plain tar through kubectl exec: api ${(v.plain.kubectlUpload.median / v.upload.api.median).toFixed(2)}x up, ${(v.plain.kubectlDownload.median / v.download.api.median).toFixed(2)}x down; kubectl transport ${(v.plain.kubectlUpload.median / v.upload.kubectl.median).toFixed(2)}x up, ${(v.plain.kubectlDownload.median / v.download.kubectl.median).toFixed(2)}x down`,
      `- of the podman floor: api ${(v.plain.podmanUpload.median / v.upload.api.median).toFixed(2)}x up, ${(v.plain.podmanDownload.median / v.download.api.median).toFixed(2)}x down; kubectl transport ${(v.plain.podmanUpload.median / v.upload.kubectl.median).toFixed(2)}x up, ${(v.plain.podmanDownload.median / v.download.kubectl.median).toFixed(2)}x down`,
      "",
    );
  }
  return lines.join("\n");
}
