// What the pod says of a run's progress (`helper.sh state`): for a runner that re-attaches to it.

/** One step as the pod shows it: still running, ended with its wrapper's exit code, or killed. */
export type PodStepState =
  { readonly kind: "running" } | { readonly kind: "exit"; readonly code: number } | { readonly kind: "killed" };

/** The pod's facts about the run, each read from a file the runner's calls leave there. */
export interface PodRunState {
  /** The upload's receipt is in the pod: the upload was extracted to its end. */
  readonly uploaded: boolean;
  /** The secrets file is there (pack-outputs removes it, after the steps). */
  readonly secrets: boolean;
  /** pack-outputs began. */
  readonly outputsPacked: boolean;
  /** Every step that was started, by index. */
  readonly steps: ReadonlyMap<number, PodStepState>;
}

/** Parses `helper.sh state`'s lines; a line it does not know is skipped (a newer helper may say more). */
export function parsePodRunState(stdout: string): PodRunState {
  let uploaded = false;
  let secrets = false;
  let outputsPacked = false;
  const steps = new Map<number, PodStepState>();
  for (const line of stdout.split("\n")) {
    const words = line.trim().split(/\s+/);
    if (words[0] === "upload") uploaded = words[1] === "done";
    else if (words[0] === "secrets") secrets = words[1] === "present";
    else if (words[0] === "outputs") outputsPacked = words[1] === "packed";
    else if (words[0] === "step" && /^\d+$/.test(words[1] ?? "")) {
      const index = Number(words[1]);
      if (words[2] === "running") steps.set(index, { kind: "running" });
      else if (words[2] === "killed") steps.set(index, { kind: "killed" });
      else if (words[2] === "exit" && /^\d+$/.test(words[3] ?? ""))
        steps.set(index, { kind: "exit", code: Number(words[3]) });
    }
  }
  return { uploaded, secrets, outputsPacked, steps };
}
