// Tangled's run variables (TANGLED_*), named and filled as Tangled's spindle fills them, from the trigger's fields.
import { deriveRefNames, type Trigger } from "../workflow/match-trigger.js";
import type { EnvVar } from "../core/env-var.js";

/** refs/tags/X → tag; anything else under refs/ → branch, as spindle tells them apart. */
function describeRef(ref: string): { name: string; type: "branch" | "tag" } {
  const names = deriveRefNames(ref);
  return { name: names.refName, type: names.tag !== undefined ? "tag" : "branch" };
}

/**
 * TANGLED_PIPELINE_ID (the pipeline's AT URI), TANGLED_PIPELINE_KIND, the repository's TANGLED_REPO_KNOT, _DID, _NAME,
 * _DEFAULT_BRANCH and _URL (given, else https://KNOT/DID/NAME when all three are known); for a push TANGLED_REF,
 * _REF_NAME, _REF_TYPE, TANGLED_SHA and TANGLED_COMMIT_SHA; for a pull request the same for its source branch plus
 * TANGLED_PR_SOURCE_BRANCH, _TARGET_BRANCH, _SOURCE_SHA and _ACTION. Each only when the trigger gives what it needs,
 * as Tangled leaves out what its trigger lacks (spindle/models/pipeline_env.go).
 */
export function buildTangledVariables(trigger: Trigger | undefined): EnvVar[] {
  if (trigger === undefined) return [];
  const url =
    trigger.repoUrl ??
    (trigger.knot && trigger.repoDid && trigger.repoName
      ? `https://${trigger.knot}/${trigger.repoDid}/${trigger.repoName}`
      : undefined);
  const known: Array<[string, string | undefined]> = [
    ["TANGLED_PIPELINE_ID", trigger.pipelineId],
    ["TANGLED_PIPELINE_KIND", trigger.event],
    ["TANGLED_REPO_KNOT", trigger.knot],
    ["TANGLED_REPO_DID", trigger.repoDid],
    ["TANGLED_REPO_NAME", trigger.repoName],
    ["TANGLED_REPO_DEFAULT_BRANCH", trigger.defaultBranch],
    ["TANGLED_REPO_URL", url],
  ];
  if (trigger.event === "pull_request") {
    const sha = trigger.prSourceSha ?? trigger.sha;
    const source = trigger.prSourceBranch;
    known.push(
      ["TANGLED_REF", source === undefined ? undefined : `refs/heads/${source}`],
      ["TANGLED_REF_NAME", source],
      ["TANGLED_REF_TYPE", source === undefined ? undefined : "branch"],
      ["TANGLED_SHA", sha],
      ["TANGLED_COMMIT_SHA", sha],
      ["TANGLED_PR_SOURCE_BRANCH", source],
      [
        "TANGLED_PR_TARGET_BRANCH",
        trigger.branch ?? (trigger.ref !== undefined ? deriveRefNames(trigger.ref).branch : undefined),
      ],
      ["TANGLED_PR_SOURCE_SHA", sha],
      ["TANGLED_PR_ACTION", trigger.prAction],
    );
  } else {
    const ref =
      trigger.ref ??
      (trigger.branch !== undefined
        ? `refs/heads/${trigger.branch}`
        : trigger.tag !== undefined
          ? `refs/tags/${trigger.tag}`
          : undefined);
    const described = ref === undefined ? undefined : describeRef(ref);
    known.push(
      ["TANGLED_REF", ref],
      ["TANGLED_REF_NAME", described?.name],
      ["TANGLED_REF_TYPE", described?.type],
      ["TANGLED_SHA", trigger.sha],
      ["TANGLED_COMMIT_SHA", trigger.sha],
    );
  }
  return known.flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }]));
}
