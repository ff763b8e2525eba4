// The in-pod clone of a git checkout, Tangled's way (init, a fetch of exactly that commit at a depth, checkout of FETCH_HEAD): POSIX sh over argv, no secret in it.
import { POD_WORK_DIR } from "./paths.js";

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
}

/** Whether git is on the image's PATH: always exits 0, printing GIT_FOUND_TAG when it is. */
export function buildGitProbeCommand(): string[] {
  return ["sh", "-c", `command -v git > /dev/null 2>&1 && echo ${GIT_FOUND_TAG}; exit 0`];
}

// $1 URL, $2 SHA, $3 DEPTH, $4 "1" for submodules, $5 the directory. No transport that runs a command (ext::), no prompt for a password.
const CLONE_SCRIPT = `export GIT_TERMINAL_PROMPT=0 GIT_ALLOW_PROTOCOL=https:http:git:ssh:file
cd "$5" || { echo "${CLONE_FAILED_TAG} cd 1"; exit 1; }
run() { s=$1; shift; "$@" || { c=$?; echo "${CLONE_FAILED_TAG} $s $c"; exit 1; }; }
run init git init -q .
run remote git remote add origin "$1"
run fetch git fetch -q --no-tags --depth "$3" origin "$2"
run checkout git -c advice.detachedHead=false checkout -q --detach FETCH_HEAD
if [ "$4" = 1 ]; then run submodules git submodule update -q --init --recursive --depth "$3"; fi
head=$(git rev-parse HEAD) || { echo "${CLONE_FAILED_TAG} head 1"; exit 1; }
[ "$head" = "$2" ] || { echo "${CLONE_FAILED_TAG} head 1"; exit 1; }
echo "${CLONE_DONE_TAG} $head"`;

/** The clone into `dir` (/work) as one exec: the values go as positional parameters, never spliced into the script. */
export function buildGitCloneCommand(spec: PodCloneSpec, dir: string = POD_WORK_DIR): string[] {
  return ["sh", "-c", CLONE_SCRIPT, "knotless-clone", spec.url, spec.sha, String(spec.depth), spec.submodules ? "1" : "0", dir];
}

/** Reads the clone's stdout: the HEAD it checked out, or the git step that failed and its exit code. */
export function readCloneReply(stdout: string): { readonly ok: true; readonly head: string } | { readonly ok: false; readonly step: string; readonly code: number } | undefined {
  for (const line of stdout.split("\n").reverse()) {
    const [tag, a, b] = line.trim().split(" ");
    if (tag === CLONE_DONE_TAG && a) return { ok: true, head: a };
    if (tag === CLONE_FAILED_TAG && a) return { ok: false, step: a, code: Number(b) };
  }
  return undefined;
}
