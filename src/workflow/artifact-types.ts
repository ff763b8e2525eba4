// The contract between the workflow's `artifacts:` and their collection after the run. Types only.

/** When an artifact is collected, by how the run ended. */
export type ArtifactWhen = "success" | "failure" | "always";

/** One `artifacts:` entry of a workflow. */
export interface ArtifactSpec {
  /** A safe file name (it becomes `<out>/artifacts/<name>/`); unique within the workflow. */
  readonly name: string;
  /** Glob patterns of files in the pod, absolute under /outputs or /work (a relative one is under /work). */
  readonly paths: readonly string[];
  readonly when: ArtifactWhen;
  /** A pattern list that matches nothing is then an error of the run (else a warning). */
  readonly required: boolean;
}

export interface ArtifactFile {
  /** Relative to the artifact's directory, `/`-separated. */
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

/** What happened to one artifact, for the log and result.json (`artifacts` in the lexicon). */
export interface ArtifactReport {
  readonly name: string;
  /** "skipped": its `when` did not match how the run ended; "empty": the patterns matched nothing. */
  readonly status: "collected" | "empty" | "skipped" | "failed";
  readonly files: readonly ArtifactFile[];
  /** The manifest written beside the files (`<out>/artifacts/<name>.manifest.json`), when collected. */
  readonly manifest?: string;
  readonly reason?: string;
}
