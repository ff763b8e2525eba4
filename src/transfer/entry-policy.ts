// Decides, from a tar header alone, whether an output archive entry may be written and where.

/** The header fields the policy looks at (see TarMember in tar-parser.ts for the type names). */
export interface EntryHeaderFields {
  readonly name: string;
  readonly type: string | null;
  readonly linkname: string | null;
}

/** What to do with one entry: its path is split into validated components relative to the destination. */
export type EntryVerdict =
  | { readonly kind: "root" }
  | { readonly kind: "refuse"; readonly reason: string }
  | { readonly kind: "directory"; readonly parts: readonly string[] }
  | { readonly kind: "file"; readonly parts: readonly string[] }
  | { readonly kind: "symlink"; readonly parts: readonly string[]; readonly target: string };

const REFUSED_TYPES: Readonly<Record<string, string>> = {
  link: "hard link",
  "character-device": "character device",
  "block-device": "block device",
  fifo: "fifo",
};

/** Types the writer cannot represent faithfully, refused with a reason of their own. */
const UNSUPPORTED_TYPES: Readonly<Record<string, string>> = {
  "gnu-sparse": "sparse file (GNU tar --sparse) is not supported",
};

/**
 * Classifies an entry: the archive root ("./") is "root", regular files, directories and symlinks whose
 * target stays inside the destination are written, everything else is refused with a reason.
 */
export function classifyEntry(header: EntryHeaderFields): EntryVerdict {
  const split = splitEntryPath(header.name);
  if ("reason" in split) return { kind: "refuse", reason: split.reason };
  const { parts } = split;
  const refusedType = header.type === null ? undefined : REFUSED_TYPES[header.type];
  if (refusedType !== undefined) {
    const detail = header.type === "link" ? ` to ${JSON.stringify(header.linkname ?? "")}` : "";
    return { kind: "refuse", reason: `${refusedType}${detail} is not allowed` };
  }
  const unsupported = header.type === null ? undefined : UNSUPPORTED_TYPES[header.type];
  if (unsupported !== undefined) return { kind: "refuse", reason: unsupported };
  if (header.type !== "file" && header.type !== "directory" && header.type !== "symlink") {
    return { kind: "refuse", reason: `unsupported entry type ${header.type ?? "unknown"}` };
  }
  if (parts.length === 0) {
    return header.type === "directory" ? { kind: "root" } : { kind: "refuse", reason: "empty path" };
  }
  if (header.type === "directory") return { kind: "directory", parts };
  if (header.type === "file") return { kind: "file", parts };
  const target = header.linkname ?? "";
  const targetProblem = findSymlinkTargetProblem(parts, target);
  return targetProblem === undefined ? { kind: "symlink", parts, target } : { kind: "refuse", reason: targetProblem };
}

/** Splits an archive path into components without "" and "."; refuses absolute paths, ".." and NUL. */
export function splitEntryPath(name: string): { readonly parts: readonly string[] } | { readonly reason: string } {
  if (name.includes("\0")) return { reason: "path contains a NUL byte" };
  if (name.startsWith("/")) return { reason: "absolute path" };
  const raw = name.split("/");
  if (raw.includes("..")) return { reason: "path contains a .. component" };
  return { parts: raw.filter((part) => part !== "" && part !== ".") };
}

/**
 * Returns why a symlink at `linkParts` pointing to `target` is unsafe, or undefined if it is safe.
 * Safe targets are relative, may start with ".." components that do not climb above the destination
 * (the link's parent is a real directory, so ".." is lexical), and have no ".." after a name: a ".."
 * after a name could step back out of another symlink (`m -> x/..` with `x -> .` escapes).
 */
export function findSymlinkTargetProblem(linkParts: readonly string[], target: string): string | undefined {
  if (target === "") return "symlink has an empty target";
  if (target.includes("\0")) return "symlink target contains a NUL byte";
  const shown = JSON.stringify(target);
  if (target.startsWith("/")) return `symlink target ${shown} is absolute`;
  let climbs = 0;
  let seenName = false;
  for (const part of target.split("/")) {
    if (part === "" || part === ".") continue;
    if (part !== "..") {
      seenName = true;
    } else if (seenName) {
      return `symlink target ${shown} has .. after a name, which could escape through another symlink`;
    } else {
      climbs += 1;
    }
  }
  if (climbs > linkParts.length - 1) return `symlink target ${shown} resolves outside the destination`;
  return undefined;
}
