// What the runner's calls need of RBAC, for everything above the seam: the Role, doctor's checks, messages about a refusal.
//
// The calls are declared once, each with its permissions, beside the kubectl builders (kubectl/kubectl-args.ts), so
// the scoped credential's Role stays derived from the calls; a transport speaking the API directly makes the same
// requests and needs the same rules.
import { buildAnnotateJobArgs, buildWatchJobArgs } from "./kubectl/kubectl-args.js";

export { collectCallPermissions, formatPermissions, type ApiPermission } from "./kubectl/kubectl-args.js";

/** What watching the run's Job needs (the cancel watch). */
export const WATCH_JOB_PERMISSIONS = buildWatchJobArgs.permissions;

/** What setting annotations on the run's Job needs (the heartbeat). */
export const PATCH_JOB_PERMISSIONS = buildAnnotateJobArgs.permissions;
