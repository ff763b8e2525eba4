// Problems found in a workflow file, each with its place and key path, and the InputError that carries them.
import { InputError } from "../core/errors.js";
import type { SourcePosition } from "./workflow-types.js";

/** One problem: `file:line:column: path: message`, like a compiler's. `path` is empty for the file as a whole. */
export interface WorkflowIssue {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** The key path, e.g. `steps[1].command`; empty for YAML syntax errors and the top level. */
  readonly path: string;
  readonly message: string;
}

/** Makes an issue at a position. */
export function makeIssue(file: string, at: SourcePosition, path: string, message: string): WorkflowIssue {
  return { file, line: at.line, column: at.column, path, message };
}

/** `wf.yml:7:5: steps[1].command: expected a string, found a map`. */
export function formatIssue(issue: WorkflowIssue): string {
  return `${issue.file}:${issue.line}:${issue.column}: ${issue.path === "" ? "" : `${issue.path}: `}${issue.message}`;
}

/** `wf.yml:3:5: warning: when[0]: ...`: a warning never stops a run or fails validation. */
export function formatWarning(issue: WorkflowIssue): string {
  return `${issue.file}:${issue.line}:${issue.column}: warning: ${issue.path === "" ? "" : `${issue.path}: `}${issue.message}`;
}

/** Orders issues by line, then column, as a reader goes through the file. */
export function sortIssues(issues: readonly WorkflowIssue[]): WorkflowIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
}

/** Bad input in a workflow file (exit 2): its message is every issue, one per line. */
export class WorkflowError extends InputError {
  constructor(readonly issues: readonly WorkflowIssue[]) {
    super(issues.map(formatIssue).join("\n"));
  }
}

/** A workflow file for another CI system (engine: tack, GitHub Actions' steps): bad input for a run, not a broken file. */
export class ForeignWorkflowError extends WorkflowError {
  constructor(
    issue: WorkflowIssue,
    /** The system the file is for: the engine it names, or `github-actions`. */
    readonly system: string,
  ) {
    super([issue]);
  }
}
