// Reads a workflow file from disk, bounded: a regular file in UTF-8 of at most 1 MiB, or the reason it is not one.
import { readBoundedTextFile, type BoundedTextRead, type FileKind } from "../core/read-bounded-file.js";

/** The largest workflow file read: Tangled's files are a few KiB; a bigger one is a mistake, not a workflow. */
export const MAX_WORKFLOW_FILE_BYTES = 1024 * 1024;

export type WorkflowFileRead = BoundedTextRead;

const WORKFLOW_FILE: FileKind = { maxBytes: MAX_WORKFLOW_FILE_BYTES, what: "a workflow file" };

/**
 * Reads the workflow file at `path`. Never blocks on a pipe or reads a device: the path is checked before it is
 * opened (non-blocking) and the open file again, and at most one byte past the bound is read. A file that is not
 * UTF-8 is refused at its first bad byte, where decoding would turn a step name into one nobody wrote.
 */
export function readWorkflowFile(path: string): WorkflowFileRead {
  return readBoundedTextFile(path, WORKFLOW_FILE);
}
