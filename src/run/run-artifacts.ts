// The run's artifact step: after copyOut, each artifact whose `when` matches how the run ended is collected; the rest are skipped.
import { CancelledError } from "../core/errors.js";
import type { RunEventInput, RunStatus } from "../events/run-events.js";
import type { Executor } from "../executor/executor.js";
import type { ArtifactReport, ArtifactSpec } from "../workflow/artifact-types.js";

type Emit = (event: RunEventInput) => void;

/** Whether an artifact is collected when the run ended so: `failure` covers failed and timed-out runs. */
export function artifactWanted(spec: ArtifactSpec, status: RunStatus): boolean {
  if (status === "cancelled") return false;
  return spec.when === "always" || (spec.when === "success") === (status === "success");
}

/**
 * Collects the artifacts in order, all within `maxBytes` of content together. Never throws but CancelledError:
 * a failure is the artifact's report. Each one's outcome is an `artifact` event.
 */
export async function collectArtifacts(
  executor: Pick<Executor, "collectArtifact">,
  specs: readonly ArtifactSpec[],
  status: RunStatus,
  maxBytes: number,
  emit: Emit,
): Promise<ArtifactReport[]> {
  const reports: ArtifactReport[] = [];
  let used = 0;
  for (const spec of specs) {
    const started = Date.now();
    let report: ArtifactReport;
    if (!artifactWanted(spec, status))
      report = {
        name: spec.name,
        status: "skipped",
        files: [],
        reason: `when: ${spec.when}, and the run ${describeStatus(status)}`,
      };
    else {
      try {
        report = await executor.collectArtifact(spec, Math.max(0, maxBytes - used));
      } catch (error) {
        if (error instanceof CancelledError) throw error;
        report = {
          name: spec.name,
          status: "failed",
          files: [],
          reason: error instanceof Error ? error.message : String(error),
        };
      }
    }
    const bytes = report.files.reduce((sum, file) => sum + file.size, 0);
    used += bytes;
    emitReport(emit, spec, report, bytes, Date.now() - started);
    reports.push(report);
  }
  return reports;
}

/** The reports of artifacts that could not be collected at all (the run ended with an error, or was cancelled). */
export function skipArtifacts(specs: readonly ArtifactSpec[], why: string, emit: Emit): ArtifactReport[] {
  return specs.map((spec) => {
    const report: ArtifactReport = { name: spec.name, status: "skipped", files: [], reason: why };
    emitReport(emit, spec, report, 0, 0);
    return report;
  });
}

/** The required artifacts a run did not get although their `when` matched: they fail a run that had succeeded. */
export function findMissingRequired(
  specs: readonly ArtifactSpec[],
  reports: readonly ArtifactReport[],
): ArtifactReport[] {
  return reports.filter(
    (report, index) => specs[index]?.required === true && (report.status === "empty" || report.status === "failed"),
  );
}

function emitReport(emit: Emit, spec: ArtifactSpec, report: ArtifactReport, bytes: number, durationMs: number): void {
  emit({
    kind: "artifact",
    name: spec.name,
    status: report.status,
    files: report.files.length,
    bytes,
    durationMs,
    required: spec.required,
    ...(report.reason ? { reason: report.reason } : {}),
  });
}

function describeStatus(status: RunStatus): string {
  return status === "success" ? "succeeded" : status === "timeout" ? "timed out" : status;
}
