// Rewrites what a reply says of a run so that it carries no host path: the run's files relative to the run, any other state path as <state-dir>.

/**
 * Returns `value` with every string rewritten: `<runDir>/x` becomes `x`, `<runDir>` itself `.`, and any other
 * mention of `stateDir` `<state-dir>`. Pure; objects and arrays are copied, other values kept.
 */
export function hideHostPaths(value: unknown, runDir: string, stateDir: string): unknown {
  const runPath = new RegExp(`${escapeRegExp(runDir)}(?:/|(?![\\w.-]))`, "g");
  const statePath = new RegExp(`${escapeRegExp(stateDir)}(?![\\w.-])`, "g");
  const rewrite = (text: string): string =>
    text.replace(runPath, (match) => (match.endsWith("/") ? "" : ".")).replace(statePath, "<state-dir>");
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return rewrite(item);
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === "object")
      return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, walk(inner)]));
    return item;
  };
  return walk(value);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
