// Reads what ReserveSeat carries (the sh.tangled.pipeline record's JSON and one Pipeline_Workflow) into our trigger, clone and inputs. Pure.
import type { Trigger } from "../workflow/match-trigger.js";
import type { EnvVar } from "../core/env-var.js";

/** A pipeline record or workflow that cannot be read: the offer is INCOMPATIBLE, with this message. */
export class PipelineRecordError extends Error {
  override readonly name = "PipelineRecordError";
}

/** One workflow of the record, as the mill sends it. */
export interface OfferedWorkflow {
  readonly name: string;
  readonly engine: string;
  /** The workflow file's text, verbatim. */
  readonly raw: string;
  readonly clone: {
    readonly skip: boolean;
    readonly depth?: number;
    readonly submodules: boolean;
    readonly tags: boolean;
  };
}

/** What the run needs of the record: the trigger (for TANGLED_* and `when`), the commit and where to fetch it, the manual inputs. */
export interface OfferedPipeline {
  readonly trigger: Trigger;
  /** The knot's clone URL, Tangled's way: https://<knot>/<repoDid>, else https://<knot>/<did>/<repo> (http for a knot that says so, or localhost:PORT). */
  readonly cloneUrl?: string;
  readonly sha?: string;
  /** TANGLED_INPUT_<KEY> (the key upper-cased) for a manual trigger's inputs, as spindle sets them. */
  readonly inputs: readonly EnvVar[];
}

type Json = Record<string, unknown>;

function readObject(value: unknown, what: string): Json {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new PipelineRecordError(`${what} is not an object`);
  return value as Json;
}

function readString(object: Json, key: string, what: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new PipelineRecordError(`${what}.${key} is not a string`);
  return value;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new PipelineRecordError(`${what} is not JSON`);
  }
}

/**
 * The knot's base URL as spindle reads a knot (hostutil.ParseHostname): a bare host is https, `localhost:PORT` http,
 * and a knot written as an http(s):// (or ws(s)://) URL keeps its scheme. Unlike spindle, a port is taken on any host
 * (a knot of a private network). Throws PipelineRecordError for anything else.
 */
export function readKnotBase(knot: string): string {
  const text = knot.includes("://") ? knot : `${knot.startsWith("localhost:") ? "http" : "https"}://${knot}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new PipelineRecordError(`triggerMetadata.repo.knot ${JSON.stringify(knot)} is not a host name`);
  }
  const scheme = { "https:": "https", "wss:": "https", "http:": "http", "ws:": "http" }[url.protocol];
  if (scheme === undefined || url.host === "" || url.username !== "" || url.password !== "")
    throw new PipelineRecordError(
      `triggerMetadata.repo.knot ${JSON.stringify(knot)} is not a host name or an http(s):// URL of one`,
    );
  return `${scheme}://${url.host}`;
}

/** The workflow of raw_workflow_json; throws PipelineRecordError naming what is missing. */
export function readOfferedWorkflow(rawWorkflowJson: string): OfferedWorkflow {
  const workflow = readObject(parseJson(rawWorkflowJson, "the workflow"), "the workflow");
  const name = readString(workflow, "name", "workflow");
  const raw = readString(workflow, "raw", "workflow");
  if (!name) throw new PipelineRecordError("the workflow has no name");
  if (raw === undefined) throw new PipelineRecordError(`workflow ${name} has no raw text`);
  const clone =
    workflow.clone === undefined || workflow.clone === null ? {} : readObject(workflow.clone, "workflow.clone");
  const depth =
    typeof clone.depth === "number" && Number.isInteger(clone.depth) && clone.depth > 0 ? clone.depth : undefined;
  return {
    name,
    engine: readString(workflow, "engine", "workflow") ?? "",
    raw,
    clone: {
      skip: clone.skip === true,
      ...(depth !== undefined ? { depth } : {}),
      submodules: clone.submodules === true,
      tags: clone.tags === true,
    },
  };
}

/** The pipeline of raw_pipeline_json, for the pipeline at `rkey` on `knot`; throws PipelineRecordError when its trigger metadata is missing or unreadable. */
export function readOfferedPipeline(rawPipelineJson: string, knot: string, rkey: string): OfferedPipeline {
  const record = readObject(parseJson(rawPipelineJson, "the pipeline record"), "the pipeline record");
  if (record.triggerMetadata === undefined || record.triggerMetadata === null)
    throw new PipelineRecordError("the pipeline record has no trigger metadata");
  const meta = readObject(record.triggerMetadata, "triggerMetadata");
  const kind = readString(meta, "kind", "triggerMetadata");
  if (kind !== "push" && kind !== "pull_request" && kind !== "manual")
    throw new PipelineRecordError(`triggerMetadata.kind ${JSON.stringify(kind)} is not push, pull_request or manual`);
  const repo = meta.repo === undefined ? {} : readObject(meta.repo, "triggerMetadata.repo");
  const repoKnot = readString(repo, "knot", "triggerMetadata.repo") ?? knot;
  const did = readString(repo, "did", "triggerMetadata.repo");
  const repoDid = readString(repo, "repoDid", "triggerMetadata.repo");
  const repoName = readString(repo, "repo", "triggerMetadata.repo");
  const defaultBranch = readString(repo, "defaultBranch", "triggerMetadata.repo");
  const common = {
    ...(repoKnot ? { knot: repoKnot } : {}),
    ...((repoDid ?? did) ? { repoDid: (repoDid ?? did)! } : {}),
    ...(repoName ? { repoName } : {}),
    ...(defaultBranch ? { defaultBranch } : {}),
    ...(did && repoName ? { repo: `${did}/${repoName}` } : {}),
    pipelineId: `at://did:web:${knot}/sh.tangled.pipeline/${rkey}`,
  };
  const base = repoKnot ? readKnotBase(repoKnot) : undefined;
  const cloneUrl =
    base && repoDid ? `${base}/${repoDid}` : base && did && repoName ? `${base}/${did}/${repoName}` : undefined;
  let trigger: Trigger;
  let inputs: EnvVar[] = [];
  if (kind === "push") {
    const push = readObject(meta.push ?? {}, "triggerMetadata.push");
    const ref = readString(push, "ref", "triggerMetadata.push");
    const sha = readString(push, "newSha", "triggerMetadata.push");
    trigger = { event: "push", ...common, ...(ref ? { ref } : {}), ...(sha ? { sha } : {}) };
  } else if (kind === "pull_request") {
    const pull = readObject(meta.pullRequest ?? {}, "triggerMetadata.pullRequest");
    const source = readString(pull, "sourceBranch", "triggerMetadata.pullRequest");
    const target = readString(pull, "targetBranch", "triggerMetadata.pullRequest");
    const sha = readString(pull, "sourceSha", "triggerMetadata.pullRequest");
    const action = readString(pull, "action", "triggerMetadata.pullRequest");
    trigger = {
      event: "pull_request",
      ...common,
      ...(target ? { branch: target } : {}),
      ...(source ? { prSourceBranch: source } : {}),
      ...(sha ? { sha, prSourceSha: sha } : {}),
      ...(action ? { prAction: action } : {}),
    };
  } else {
    const manual = readObject(meta.manual ?? {}, "triggerMetadata.manual");
    const sha = readString(manual, "sha", "triggerMetadata.manual");
    const ref = readString(manual, "ref", "triggerMetadata.manual");
    trigger = { event: "manual", ...common, ...(sha ? { sha } : {}), ...(ref ? { ref } : {}) };
    const pairs = Array.isArray(manual.inputs) ? manual.inputs : [];
    inputs = pairs.flatMap((pair) => {
      const object = readObject(pair, "triggerMetadata.manual.inputs[]");
      const key = readString(object, "key", "input");
      const value = readString(object, "value", "input") ?? "";
      return key && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? [{ name: `TANGLED_INPUT_${key.toUpperCase()}`, value }] : [];
    });
  }
  return { trigger, ...(cloneUrl ? { cloneUrl } : {}), ...(trigger.sha ? { sha: trigger.sha } : {}), inputs };
}
