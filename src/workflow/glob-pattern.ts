// Checks `branch`/`tag` glob patterns the way Tangled's doublestar (v1) reads them, and rewrites them for picomatch.
//
// doublestar splits pattern and name on `/` and matches component by component: `*` and `?` stay within a component,
// a component that is exactly `**` matches zero or more components, `**` inside a component is just `*`, `[...]`
// (`[^...]` negated) and `{a,b}` work within a component, `\` escapes; every other character is itself. picomatch
// (with the options in match-trigger.ts) agrees except where it gives a character a meaning doublestar does not:
// `( ) | + @ !` are escaped here, and a brace group without a comma (`{a}`, one alternative in doublestar) is
// written with the alternative twice.

const LITERAL_IN_DOUBLESTAR = new Set(["(", ")", "|", "+", "@", "!"]);

/** Splits on `/` that is not escaped, as doublestar does before it looks at anything else. */
function splitComponents(pattern: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === "\\" && i + 1 < pattern.length) {
      current += char + pattern[i + 1]!;
      i++;
    } else if (char === "/") {
      parts.push(current);
      current = "";
    } else current += char;
  }
  parts.push(current);
  return parts;
}

/** Why doublestar would refuse one component (ErrBadPattern), or undefined. */
function checkComponent(component: string): string | undefined {
  let braces = 0;
  for (let i = 0; i < component.length; i++) {
    const char = component[i]!;
    if (char === "\\") {
      if (i + 1 >= component.length) return "ends in a `\\` that escapes nothing";
      i++;
    } else if (char === "[") {
      let end = i + 1;
      const items: string[] = [];
      while (end < component.length && component[end] !== "]") {
        if (component[end] === "\\") {
          if (end + 1 >= component.length) return "ends in a `\\` that escapes nothing";
          items.push(component.slice(end, end + 2));
          end += 2;
        } else items.push(component[end++]!);
      }
      if (end >= component.length) return "has a `[` without its `]` (within one `/`-separated part)";
      const body = items[0] === "^" ? items.slice(1) : items;
      if (body.length === 0) return "has an empty character class `[]`";
      for (let k = 0; k < body.length; k++) {
        if (body[k] !== "-") continue;
        if (k === 0 || k === body.length - 1 || body[k + 1] === "-" || body[k - 1] === "-")
          return "has a `-` in a character class that does not stand between two characters";
      }
      i = end;
    } else if (char === "{") braces++;
    else if (char === "}" && braces > 0) braces--;
  }
  return braces > 0 ? "has a `{` without its `}` (within one `/`-separated part)" : undefined;
}

/** Why doublestar would refuse the pattern as a bad pattern (or it is empty), or undefined: the syntax alone. */
export function checkGlobSyntax(pattern: string): string | undefined {
  if (pattern === "") return "is empty";
  for (const component of splitComponents(pattern)) {
    const problem = checkComponent(component);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Why the pattern is refused, or undefined when it is fine: what doublestar refuses as a bad pattern, plus `..`,
 * which no git branch or tag name contains (so such a pattern could never match).
 */
export function checkGlobPattern(pattern: string): string | undefined {
  const problem = checkGlobSyntax(pattern);
  if (problem !== undefined) return problem;
  const outsideClasses = pattern.replace(/\\./g, "__").replace(/\[[^\]]*\]/g, "_");
  if (outsideClasses.includes(".."))
    return "contains `..`, which no git branch or tag name contains, so it could never match";
  return undefined;
}

/** The pattern as picomatch must see it to match what doublestar matches (for a pattern checkGlobPattern accepts). */
export function toPicomatchPattern(pattern: string): string {
  let out = "";
  const groups: Array<{ start: number; hasComma: boolean }> = [];
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === "\\" && i + 1 < pattern.length) {
      out += char + pattern[i + 1]!;
      i++;
    } else if (char === "[") {
      let end = i + 1;
      while (end < pattern.length && pattern[end] !== "]") end += pattern[end] === "\\" ? 2 : 1;
      const body = pattern.slice(i + 1, end);
      // doublestar negates with `^` only; a leading `!` is a character of the class.
      out += `[${body.startsWith("!") ? `\\${body}` : body}]`;
      i = end;
    } else if (char === "{") {
      groups.push({ start: out.length + 1, hasComma: false });
      out += char;
    } else if (char === "," && groups.length > 0) {
      groups.at(-1)!.hasComma = true;
      out += char;
    } else if (char === "}" && groups.length > 0) {
      const group = groups.pop()!;
      out += group.hasComma ? "}" : `,${out.slice(group.start)}}`;
    } else out += LITERAL_IN_DOUBLESTAR.has(char) ? `\\${char}` : char;
  }
  return out;
}
