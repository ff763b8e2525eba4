// The settings of one run, the last stage before it runs: the executor's, plus what only the run itself uses.
import type { ExecutorSettings } from "../executor/kubernetes/context.js";
import type { GitCheckoutSpec, GitSetting } from "../transfer/git-checkout.js";
import type { WorkflowSummary } from "./plan-workflow-run.js";

/** The run's settings: the executor's, plus what only the run itself uses. */
export type RunSettings = ExecutorSettings & {
  readonly stepTimeoutMs?: number;
  /** The workflow file the run came from, for the result (settings/plan-workflow-run.ts); absent for a steps file. */
  readonly workflow?: WorkflowSummary;
  /**
   * A checkout to clone at one commit instead of uploading one: into /work in the pod when its image has git
   * (Tangled's way), else on the host with `host` into `checkoutDir` (an empty directory) before the upload.
   */
  readonly gitCheckout?: GitCheckoutSpec & { readonly host?: GitSetting };
};
