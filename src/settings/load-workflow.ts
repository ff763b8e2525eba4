// Reads, parses and resolves one workflow file for a run: the one call `run --workflow` needs.
import { InputError } from "../core/errors.js";
import { parseWorkflow } from "../workflow/parse-workflow.js";
import { readWorkflowFile } from "../workflow/read-workflow-file.js";
import { resolveWorkflow, type ResolveOptions, type ResolvedWorkflow } from "./resolve-workflow.js";
import { ForeignWorkflowError, makeIssue, WorkflowError, type WorkflowIssue } from "../workflow/workflow-errors.js";
import type { Workflow } from "../workflow/workflow-types.js";

export interface LoadedWorkflow {
  readonly resolved: ResolvedWorkflow;
  readonly parsed: Workflow;
  /** Worth printing before the run; never a reason to refuse it. */
  readonly warnings: readonly WorkflowIssue[];
}

/**
 * Loads the workflow at `path` (and the `yaml` package, on first use). Rejects with InputError when the file cannot be
 * read or is not a regular UTF-8 file of at most 1 MiB (src/workflow/read-workflow-file.ts), and with WorkflowError (an InputError,
 * exit 2) listing every problem when it does not parse or resolve. `name` is how messages name the file (the path
 * by default).
 */
export async function loadWorkflowFile(
  path: string,
  options: ResolveOptions & { readonly name?: string } = {},
): Promise<LoadedWorkflow> {
  const name = options.name ?? path;
  const read = readWorkflowFile(path);
  if (read.ok) return loadWorkflowText(read.text, name, options);
  if (read.at !== undefined) throw new WorkflowError([makeIssue(name, read.at, "", read.problem)]);
  throw new InputError(read.problem, name);
}

/**
 * Parses and resolves a workflow given as text (the library's form: the daemon has the file's content, not a path),
 * `name` naming it in every `name:line:column` message. Rejects with WorkflowError listing every problem, and with
 * ForeignWorkflowError (a WorkflowError) for a file written for another CI system.
 */
export async function loadWorkflowText(
  text: string,
  name: string,
  options: ResolveOptions = {},
): Promise<LoadedWorkflow> {
  const parsed = await parseWorkflow(text, name);
  if (!parsed.ok && parsed.foreign) throw new ForeignWorkflowError(parsed.errors[0]!, parsed.foreign.system);
  if (!parsed.ok) throw new WorkflowError(parsed.errors);
  const resolved = resolveWorkflow(parsed.workflow, options);
  if (!resolved.ok) throw new WorkflowError(resolved.errors);
  return {
    resolved: resolved.workflow,
    parsed: parsed.workflow,
    warnings: [...parsed.warnings, ...resolved.workflow.clamped],
  };
}
