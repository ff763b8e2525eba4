// Decides, from tar headers alone and in archive order, whether a cache archive's member may be restored in the pod.
//
// Member naming: a cache archive holds the cache's paths as they are in the pod, relative to `/`, without a leading
// slash: `/work/node_modules` is packed with `tar -C / -c work/node_modules` and its members are named
// `work/node_modules/...` (a leading `./` is tolerated). It is restored with `tar -C / -x`. So a member is allowed
// only at or under one of the cache's paths (its roots), and the /outputs rules apply within them (entry-policy.ts):
// no absolute name, no `..`, no NUL, no device or fifo; a symlink must be relative and resolve inside the root that
// holds it (no `..` after a name); a hard link must name a member inside a root. Unlike /outputs, which the host
// writes itself and never through a symlink, the pod's tar does the writing; busybox tar follows a symlink the
// archive made earlier, so a member under (or at) the path of an earlier symlink member is refused too.
import { findSymlinkTargetProblem, splitEntryPath } from "../transfer/entry-policy.js";
import type { TarMember } from "../transfer/tar-parser.js";

/** Longest member name accepted (Linux's PATH_MAX), and longest component (NAME_MAX), in UTF-8 bytes. */
export const MAX_MEMBER_NAME_BYTES = 4096;
export const MAX_COMPONENT_BYTES = 255;
/** Most symlink members remembered (their paths are what the check keeps per member); more is refused. */
export const MAX_SYMLINKS = 200_000;

const REFUSED_TYPES: Readonly<Record<string, string>> = {
  "character-device": "character device",
  "block-device": "block device",
  fifo: "fifo",
};

/** The cache's pod paths as name components: `/work/node_modules` → [work, node_modules]; `/` → [] (anything). */
export function readCacheRoots(paths: readonly string[]): ReadonlyArray<readonly string[]> {
  return paths.map((path) => {
    if (!path.startsWith("/"))
      throw new TypeError(`a cache path must be absolute in the pod, got ${JSON.stringify(path)}`);
    const split = splitEntryPath(path.slice(1));
    if ("reason" in split) throw new TypeError(`a cache path must not contain "..", got ${JSON.stringify(path)}`);
    return split.parts;
  });
}

/** Checks members in archive order; remembers the symlinks seen so far. */
export class CacheMemberPolicy {
  private readonly symlinks = new Set<string>();

  constructor(private readonly roots: ReadonlyArray<readonly string[]>) {}

  /** Why `member` must not be restored, or undefined when it may. */
  check(member: TarMember): string | undefined {
    const split = splitEntryPath(member.name);
    if ("reason" in split) return split.reason;
    const { parts } = split;
    if (Buffer.byteLength(member.name) > MAX_MEMBER_NAME_BYTES)
      return `path is longer than ${MAX_MEMBER_NAME_BYTES} bytes`;
    if (parts.some((part) => Buffer.byteLength(part) > MAX_COMPONENT_BYTES))
      return `a path component is longer than ${MAX_COMPONENT_BYTES} bytes`;
    const refused = REFUSED_TYPES[member.type];
    if (refused !== undefined) return `${refused} is not allowed`;
    if (member.type !== "file" && member.type !== "directory" && member.type !== "symlink" && member.type !== "link") {
      return member.type === "gnu-sparse"
        ? "sparse file (GNU tar --sparse) is not supported"
        : `unsupported entry type ${member.type}`;
    }
    const root = this.rootOf(parts);
    if (root === undefined) return `outside the cache's paths (${this.describeRoots()})`;
    const through = this.symlinkOnPath(parts);
    if (through !== undefined)
      return `${through === parts.join("/") ? "replaces" : "is written through"} the symlink ${JSON.stringify(through)} earlier in the archive`;
    if (member.type === "link") return this.checkHardLink(member.linkname);
    if (member.type === "symlink") {
      const problem = findSymlinkTargetProblem(parts.slice(root.length), member.linkname);
      if (problem !== undefined) return problem.replace("the destination", `the cache path /${root.join("/")}`);
      if (this.symlinks.size >= MAX_SYMLINKS) return `more than ${MAX_SYMLINKS} symlinks`;
      this.symlinks.add(parts.join("/"));
    }
    return undefined;
  }

  private checkHardLink(target: string): string | undefined {
    const shown = JSON.stringify(target);
    const split = splitEntryPath(target);
    if ("reason" in split) return `hard link to ${shown}: ${split.reason}`;
    if (split.parts.length === 0 || this.rootOf(split.parts) === undefined)
      return `hard link to ${shown} outside the cache's paths`;
    if (this.symlinkOnPath(split.parts) !== undefined)
      return `hard link to ${shown} through a symlink earlier in the archive`;
    return undefined;
  }

  /** The shortest root that holds `parts`. */
  private rootOf(parts: readonly string[]): readonly string[] | undefined {
    let best: readonly string[] | undefined;
    for (const root of this.roots) {
      if (
        root.length <= parts.length &&
        root.every((part, index) => parts[index] === part) &&
        (best === undefined || root.length < best.length)
      )
        best = root;
    }
    return best;
  }

  /** The earlier symlink member that `parts` is, or lies under. */
  private symlinkOnPath(parts: readonly string[]): string | undefined {
    if (this.symlinks.size === 0) return undefined;
    let prefix = "";
    for (const part of parts) {
      prefix = prefix === "" ? part : `${prefix}/${part}`;
      if (this.symlinks.has(prefix)) return prefix;
    }
    return undefined;
  }

  private describeRoots(): string {
    return this.roots.map((root) => `/${root.join("/")}`).join(", ");
  }
}
