// The paths in the pod that `caches:` and `artifacts:` name: normalized, and kept away from the runner's own directories.
import { POD_OUTPUTS_DIR, POD_RUNNER_DIR, POD_SECRETS_DIR, POD_STEPS_DIR, POD_WORK_DIR } from "./pod-paths.js";

export type PodPath = { readonly path: string } | { readonly problem: string };

/** Top-level directories no cache may hold: the runner's own, and the kernel's. */
const CACHE_REFUSED_ROOTS: ReadonlyArray<readonly [string, string]> = [
  [POD_RUNNER_DIR, "the runner's own directory"],
  [POD_SECRETS_DIR, "the runner's secrets volume"],
  [POD_STEPS_DIR, "the shared steps the runner uploads"],
  ["/proc", "the kernel's process file system"],
  ["/sys", "the kernel's device file system"],
  ["/dev", "the pod's devices"],
];

/** Characters a cache path may not hold: a cache names files and directories, not patterns. */
const PATTERN_CHARACTERS = /[*?[\]{}]/;

/**
 * A path as written in the file, made absolute (a relative one is under /work) and normalized: `.` segments and
 * repeated or trailing `/` go; a `..` segment, a `~` and control characters are refused.
 */
export function normalizePodPath(text: string): PodPath {
  if (/[\x00-\x1f\x7f]/.test(text)) return { problem: "has a control character" };
  if (text.startsWith("~"))
    return { problem: "starts with `~`, which is not expanded; write the absolute path, such as /root/.npm" };
  const segments = (text.startsWith("/") ? text : `${POD_WORK_DIR}/${text}`)
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".");
  if (segments.includes(".."))
    return { problem: "has a `..` segment; write the path it means, absolute or relative to /work" };
  return { path: `/${segments.join("/")}` };
}

/** Whether `path` is `dir` or under it (both normalized). */
export function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === "/" ? "/" : `${dir}/`);
}

/** A cache path: a file or directory in the pod, not the whole file system, not under the runner's or the kernel's directories. */
export function readCachePath(text: string): PodPath {
  const normalized = normalizePodPath(text);
  if ("problem" in normalized) return normalized;
  const { path } = normalized;
  if (PATTERN_CHARACTERS.test(path))
    return { problem: "has a glob character (* ? [ ] { }); a cache path names a file or directory" };
  if (path === "/")
    return {
      problem: "is the whole file system of the pod; name the directories to keep, such as node_modules or /root/.npm",
    };
  for (const [root, what] of CACHE_REFUSED_ROOTS) {
    if (isUnder(path, root)) return { problem: `is under ${root}, ${what}; a cache may not hold it` };
  }
  return { path };
}

/** An artifact path: a glob pattern of files under /outputs or /work (a relative one is under /work). */
export function readArtifactPath(text: string): PodPath {
  const normalized = normalizePodPath(text);
  if ("problem" in normalized) return normalized;
  const { path } = normalized;
  const under = [POD_OUTPUTS_DIR, POD_WORK_DIR].find((dir) => path.startsWith(`${dir}/`));
  if (under === undefined) {
    if (path === POD_OUTPUTS_DIR || path === POD_WORK_DIR)
      return { problem: `names the directory ${path} itself; name its files, such as ${path}/**` };
    return {
      problem: "is not under /outputs or /work; artifacts are collected from there (a relative path is under /work)",
    };
  }
  return { path };
}
