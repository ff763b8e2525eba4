// The `validate` command's work: finds the workflow files named on the command line, checks each, reports them all.
import { readdirSync, statSync } from "node:fs";
import type { RunnerConfigSource } from "../config/runner-config.js";
import { describeFsError } from "../core/read-bounded-file.js";
import { applyLimits } from "./apply-limits.js";
import { parseWorkflow } from "../workflow/parse-workflow.js";
import { readWorkflowFile } from "../workflow/read-workflow-file.js";
import { formatIssue, formatWarning, type WorkflowIssue } from "../workflow/workflow-errors.js";
import type { EngineName } from "../workflow/workflow-types.js";

/** The verdict on one file. */
export interface FileCheck {
  readonly file: string;
  /** The runner configuration of `validate --config`, not a workflow file. */
  readonly config?: true;
  readonly steps?: number;
  readonly engine?: EngineName;
  /** The file is for another CI system: what it is for, and the issue saying so (not counted as an error). */
  readonly foreign?: { readonly system: string; readonly issue: WorkflowIssue };
  readonly errors: readonly WorkflowIssue[];
  readonly warnings: readonly WorkflowIssue[];
}

export interface ValidateReport {
  readonly checks: readonly FileCheck[];
  /** Paths that name nothing to check: missing, unreadable, or a directory without workflow files. */
  readonly pathProblems: readonly string[];
}

const WORKFLOW_FILE = /\.ya?ml$/;

/** Whether a directory entry is a file, following a symbolic link. */
function isFileEntry(dir: string, name: string): boolean {
  try {
    return statSync(`${dir}/${name}`).isFile();
  } catch {
    return false;
  }
}

/**
 * The files to check, in the order given: a file as named, a directory as every `*.yml` and `*.yaml` directly in
 * it (by name), each file once. A path that does not exist, or a directory without workflow files, is a problem.
 */
export function listWorkflowFiles(paths: readonly string[]): { files: string[]; problems: string[] } {
  const files: string[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  const add = (file: string): void => {
    if (!seen.has(file)) files.push(file);
    seen.add(file);
  };
  for (const path of paths) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(path).isDirectory();
    } catch (error) {
      problems.push(`${path}: ${describeFsError(error)}`);
      continue;
    }
    if (!isDirectory) {
      add(path);
      continue;
    }
    const dir = path.length > 1 ? path.replace(/\/+$/, "") : path;
    let names: string[];
    try {
      names = readdirSync(dir)
        .filter((name) => WORKFLOW_FILE.test(name) && isFileEntry(dir, name))
        .sort();
    } catch (error) {
      problems.push(`${path}: cannot list the directory: ${describeFsError(error)}`);
      continue;
    }
    if (names.length === 0) problems.push(`${path}: no workflow files (*.yml, *.yaml) in this directory`);
    for (const name of names) add(dir === "/" ? `/${name}` : `${dir}/${name}`);
  }
  return { files, problems };
}

/** Checks the text of one workflow file; with the runner configuration (`validate --config`), against its `limits` too. */
export async function checkWorkflowText(text: string, file: string, runner?: RunnerConfigSource): Promise<FileCheck> {
  const parsed = await parseWorkflow(text, file);
  if (!parsed.ok && parsed.foreign)
    return { file, foreign: { system: parsed.foreign.system, issue: parsed.errors[0]! }, errors: [], warnings: [] };
  if (!parsed.ok) return { file, errors: parsed.errors, warnings: parsed.warnings };
  const limited = runner === undefined ? { errors: [], clamped: [], clamps: [] } : applyLimits(parsed.workflow, runner);
  return {
    file,
    steps: parsed.workflow.steps.length,
    engine: parsed.workflow.engine,
    errors: limited.errors,
    warnings: [...parsed.warnings, ...limited.clamped],
  };
}

/** Lists and checks every file the paths name; never throws for a bad file, it reports it. */
export async function validateWorkflowPaths(
  paths: readonly string[],
  runner?: RunnerConfigSource,
): Promise<ValidateReport> {
  const { files, problems } = listWorkflowFiles(paths);
  const checks: FileCheck[] = [];
  for (const file of files) {
    const read = readWorkflowFile(file);
    if (!read.ok) {
      checks.push({
        file,
        errors: [{ file, ...(read.at ?? { line: 1, column: 1 }), path: "", message: read.problem }],
        warnings: [],
      });
      continue;
    }
    checks.push(await checkWorkflowText(read.text, file, runner));
  }
  return { checks, pathProblems: problems };
}

/**
 * What the command prints: `ok` lines, and `other` lines for files written for another CI system (not errors: a
 * repository may keep them beside its Tangled workflows), on stdout; errors, warnings and a count on stderr. `ok`
 * when nothing failed.
 */
export function formatValidateReport(report: ValidateReport): { stdout: string; stderr: string; ok: boolean } {
  let stdout = "";
  let stderr = "";
  for (const problem of report.pathProblems) stderr += `${problem}\n`;
  for (const check of report.checks) {
    for (const error of check.errors) stderr += `${formatIssue(error)}\n`;
    for (const warning of check.warnings) stderr += `${formatWarning(warning)}\n`;
    if (check.foreign) stdout += `other  ${formatIssue(check.foreign.issue)}\n`;
    else if (check.errors.length === 0 && check.config) stdout += `ok  ${check.file} (runner configuration)\n`;
    else if (check.errors.length === 0)
      stdout += `ok  ${check.file} (${check.steps} ${check.steps === 1 ? "step" : "steps"}, engine ${check.engine})\n`;
  }
  const failed = report.checks.filter((check) => check.errors.length > 0);
  const errorCount = failed.reduce((sum, check) => sum + check.errors.length, 0);
  const parts: string[] = [];
  if (errorCount > 0)
    parts.push(
      `${errorCount} ${errorCount === 1 ? "error" : "errors"} in ${failed.length} of ${report.checks.length} ${report.checks.length === 1 ? "file" : "files"}`,
    );
  if (report.pathProblems.length > 0)
    parts.push(
      `${report.pathProblems.length} ${report.pathProblems.length === 1 ? "path" : "paths"} with nothing to check`,
    );
  if (parts.length > 0) stderr += `validate: ${parts.join(", ")}\n`;
  return { stdout, stderr, ok: parts.length === 0 };
}
