// The in-pod clone of a git checkout, Tangled's way (init, a fetch of exactly that commit at a depth, tags when asked, checkout of FETCH_HEAD): POSIX sh over argv, no secret in it.
import { POD_WORK_DIR } from "../workflow/pod-paths.js";
import { renderShellProgram } from "./render-sh.js";
import { GIT_CLONE_SH, GIT_PROBE_SH } from "./sh/embedded.gen.js";

/** The line the probe prints on stdout when the image has git on its PATH. */
export const GIT_FOUND_TAG = "knotless-git-found";
/** The line the clone prints on stdout once HEAD is the commit: `knotless-clone-done SHA`. */
export const CLONE_DONE_TAG = "knotless-clone-done";
/** The line the clone prints on stdout when a git command failed: `knotless-clone-failed STEP EXIT` (STEP: init, remote, fetch, checkout, submodules, head). */
export const CLONE_FAILED_TAG = "knotless-clone-failed";

/** What the pod clones: a URL the service checked (no credentials in it), a full commit id, a depth of at least 1. */
export interface PodCloneSpec {
  readonly url: string;
  readonly sha: string;
  readonly depth: number;
  readonly submodules: boolean;
  /** Fetch every tag as well (spindle's `git fetch --tags`, each at the same depth); absent: no tags. */
  readonly tags?: boolean;
}

/** Whether git is on the image's PATH: always exits 0, printing GIT_FOUND_TAG when it is. */
export function buildGitProbeCommand(): string[] {
  return ["sh", "-c", renderShellProgram({ GIT_FOUND_TAG }, GIT_PROBE_SH)];
}

/** The clone into `dir` (/work) as one exec of src/pod/sh/git-clone.sh: the values go as positional parameters, never spliced into the script. */
export function buildGitCloneCommand(spec: PodCloneSpec, dir: string = POD_WORK_DIR): string[] {
  const script = renderShellProgram({ CLONE_DONE_TAG, CLONE_FAILED_TAG }, GIT_CLONE_SH);
  return [
    "sh",
    "-c",
    script,
    "knotless-clone",
    spec.url,
    spec.sha,
    String(spec.depth),
    spec.submodules ? "1" : "0",
    dir,
    spec.tags === true ? "1" : "0",
  ];
}

/** Reads the clone's stdout: the HEAD it checked out, or the git step that failed and its exit code. */
export function readCloneReply(
  stdout: string,
):
  | { readonly ok: true; readonly head: string }
  | { readonly ok: false; readonly step: string; readonly code: number }
  | undefined {
  for (const line of stdout.split("\n").reverse()) {
    const [tag, a, b] = line.trim().split(" ");
    if (tag === CLONE_DONE_TAG && a) return { ok: true, head: a };
    if (tag === CLONE_FAILED_TAG && a) return { ok: false, step: a, code: Number(b) };
  }
  return undefined;
}
