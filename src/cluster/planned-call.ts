// A call the runner would make of a cluster, in no transport's words: what --dry-run plans (a run, warm, credentials),
// and what each transport then describes as it would make it (a kubectl command, API requests: cluster/transports).

/** Which call, with what only the plan knows; the cluster target (kubeconfig, context, namespace) comes with the description. */
export type ClusterCallPlan =
  /** Lists our Jobs by label; `beforeCreate`: made before the run's create, so in the context's namespace when create leaves it to kubectl. */
  | { readonly call: "listJobs"; readonly selector: string; readonly beforeCreate?: boolean }
  /** Deletes one placeholder only if it is still the one listed (its `preconditions`, described). */
  | {
      readonly call: "claimPlaceholder";
      readonly name: string;
      readonly preconditions: string;
      readonly beforeCreate?: boolean;
    }
  /** Creates a Job; `body` says which manifest. */
  | { readonly call: "createJob"; readonly body: string }
  | { readonly call: "createBudget" }
  | { readonly call: "watchJob"; readonly job: string }
  | { readonly call: "annotateJob"; readonly job: string; readonly annotations: Readonly<Record<string, string>> }
  /** Waits for the run's pod (by its run-id label). */
  | { readonly call: "watchPods"; readonly selector: string }
  /** Looks at the events of one object. */
  | { readonly call: "watchEvents"; readonly kind: "Pod" | "Job"; readonly name: string }
  | { readonly call: "exec"; readonly pod: string; readonly command: readonly string[]; readonly stdin: boolean }
  | { readonly call: "deleteJob"; readonly job: string }
  | { readonly call: "deleteBudget"; readonly name: string }
  /** Deletes every Job the selector matches (`each` names one in the plan). */
  | { readonly call: "deleteJobsBySelector"; readonly selector: string; readonly each: string }
  /** An instance's Lease (serve): read, created when absent, renewed and released by replacing it at the version read. */
  | { readonly call: "getLease"; readonly name: string }
  | { readonly call: "listLeases"; readonly selector: string }
  | { readonly call: "createLease"; readonly name: string }
  | { readonly call: "updateLease"; readonly name: string }
  /** Deletes a Lease (a clean stop), or only at the version read (an adopter's clean-up of an expired one). */
  | { readonly call: "deleteLease"; readonly name: string; readonly resourceVersion?: string }
  /** An adopter's claim of a run: its annotations set only if the Job is still at the version read. */
  | {
      readonly call: "claimJob";
      readonly job: string;
      readonly resourceVersion: string;
      readonly annotations: Readonly<Record<string, string>>;
    }
  /** The admin's: reads the admin kubeconfig's server and CA. */
  | { readonly call: "viewAdminConfig" }
  | { readonly call: "applyCredential"; readonly namespace: string; readonly name: string }
  | { readonly call: "requestToken"; readonly namespace: string; readonly serviceAccount: string }
  | { readonly call: "deleteCredential"; readonly namespace: string; readonly name: string };

/** One planned call, with what goes to its stdin (described, never the bytes) and when it is made, if not exactly once. */
export interface PlannedCall {
  readonly plan: ClusterCallPlan;
  readonly stdin?: string;
  readonly note?: string;
}

/** The namespace a planned call names: the pinned one, else the kubeconfig context's, shown as a stand-in. */
export function describePlannedNamespace(target: { readonly namespace?: string }): string {
  return target.namespace ?? "<namespace>";
}
