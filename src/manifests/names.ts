// Derives valid Kubernetes names and label values from arbitrary run ids.
import { createHash } from "node:crypto";

/** The container name of the run pod; every exec names it explicitly. */
export const RUN_CONTAINER = "run";

export const JOB_NAME_PREFIX = "knotless-run-";
const MAX_NAME = 63;
const HASH_LENGTH = 8;

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, HASH_LENGTH);
}

/** Lowercases and replaces anything outside [a-z0-9-] with '-', collapsing runs and trimming dashes. */
function sanitizeDnsLabel(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/**
 * `knotless-run-<runId>` as a DNS-1123 label (at most 63 characters, [a-z0-9-], alphanumeric at both ends).
 * When the run id had to be changed or shortened, a hash of the original keeps distinct ids distinct.
 */
export function buildJobName(runId: string): string {
  const clean = sanitizeDnsLabel(runId);
  const fits = JOB_NAME_PREFIX.length + clean.length <= MAX_NAME;
  if (clean === runId && clean !== "" && fits) return JOB_NAME_PREFIX + clean;
  const room = MAX_NAME - JOB_NAME_PREFIX.length - HASH_LENGTH - 1;
  const head = clean.slice(0, room).replace(/-+$/g, "");
  return JOB_NAME_PREFIX + (head ? `${head}-` : "") + shortHash(runId);
}

/** A label value (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends) that identifies the run. */
export function buildRunIdLabel(runId: string): string {
  const valid = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
  if (valid.test(runId)) return runId;
  const clean = runId.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  const head = clean.slice(0, MAX_NAME - HASH_LENGTH - 1).replace(/[^A-Za-z0-9]+$/g, "");
  return (head ? `${head}-` : "") + shortHash(runId);
}

/** Run ids given on the command line: printable, no whitespace, at most 128 characters. */
export function isAcceptableRunId(runId: string): boolean {
  return /^[\x21-\x7e]{1,128}$/.test(runId);
}
