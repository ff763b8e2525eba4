// Reads the workflow fixtures (test/fixtures/workflows/) and parses them, failing the test with every issue found.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../support/run-cli.js";
import * as yaml from "yaml";
import { parseWorkflowWith, type ParseResult } from "../../src/workflow/parse-workflow.js";
import { formatIssue } from "../../src/workflow/workflow-errors.js";
import type { Workflow } from "../../src/workflow/workflow-types.js";

export const WORKFLOW_FIXTURES = join(REPO_ROOT, "test", "fixtures", "workflows");

export function readFixture(name: string): string {
  return readFileSync(join(WORKFLOW_FIXTURES, name), "utf8");
}

/** Parses `text` (synchronously, with the yaml package loaded here) and returns the workflow, or fails with the issues as the message. */
export function parseOk(text: string, file = "wf.yml"): Workflow {
  const result = parseWorkflowWith(yaml, text, file);
  assert.ok(result.ok, `expected no errors, found:\n${result.ok ? "" : result.errors.map(formatIssue).join("\n")}`);
  return result.workflow;
}

/** Parses `text` expecting errors; returns them formatted, one string per error. */
export function parseErrors(text: string, file = "wf.yml"): string[] {
  const result: ParseResult = parseWorkflowWith(yaml, text, file);
  assert.ok(!result.ok, "expected errors, found none");
  return result.errors.map(formatIssue);
}
