// The restructure's mapping (issue 35, layers that import only downward): old path -> new path, a file or a folder
// (trailing slash). The longest matching entry wins, so a file entry overrides its folder's; an entry mapping a path to
// itself keeps it where it is. test/ mirrors src/: a test file follows the source file it is named after.
export const MOVES = [
  // core: the generic pieces every layer may use.
  ["src/errors.ts", "src/core/errors.ts"],
  ["src/util/", "src/core/"],
  ["src/config/duration.ts", "src/core/duration.ts"],
  ["src/config/patterns.ts", "src/core/patterns.ts"],
  ["src/k8s/quantity.ts", "src/core/quantity.ts"],

  // workflow: the language of workflow and steps files, their spec types (artifacts, caches, resources, pod paths).
  ["src/input/", "src/workflow/"],
  ["src/artifacts/artifact-types.ts", "src/workflow/artifact-types.ts"],
  ["src/cache/render-key.ts", "src/workflow/render-key.ts"],
  ["src/cache/cache-types.ts", "src/workflow/cache-types.ts"],
  ["src/config/resource-bounds.ts", "src/workflow/resource-bounds.ts"],
  ["src/pod/paths.ts", "src/workflow/pod-paths.ts"],

  // pod: the in-pod programs.
  ["src/workflow/nix-install.ts", "src/pod/nix-install.ts"],
  ["src/cache/pvc-layout.ts", "src/pod/pvc-layout.ts"],

  // transfer: the compression sniffing the cache transfer and the archive gate share.
  ["src/cache/sniff-compression.ts", "src/transfer/sniff-compression.ts"],
  // and the host's git clone at one commit, the other way a checkout is made before it is uploaded.
  ["src/run/git-checkout.ts", "src/transfer/git-checkout.ts"],

  // manifests: pure builders of Kubernetes objects.
  ["src/k8s/", "src/manifests/"],

  // cluster/transports: the one place that knows the transports by name (a folder of its own: the seam's folder would
  // import the transports that import it).
  ["src/cluster/open-cluster.ts", "src/cluster/transports/open-cluster.ts"],
  ["src/plan/format-calls.ts", "src/cluster/transports/format-calls.ts"],

  // cluster/api: the API transport's descriptions of a planned call.
  ["src/plan/api-request.ts", "src/cluster/api/api-request.ts"],

  // executor: the contract stays, its Kubernetes implementation beside it.
  ["src/executor/", "src/executor/kubernetes/"],
  ["src/executor/executor.ts", "src/executor/executor.ts"],
  ["src/executor/cache-archive.ts", "src/executor/cache-archive.ts"],
  ["src/artifacts/plan-artifact.ts", "src/executor/kubernetes/plan-artifact.ts"],

  // settings: workflow + configuration + overrides into one settings object.
  ["src/workflow/apply-limits.ts", "src/settings/apply-limits.ts"],
  ["src/workflow/resolve-workflow.ts", "src/settings/resolve-workflow.ts"],
  ["src/workflow/validate-files.ts", "src/settings/validate-files.ts"],
  ["src/workflow/load-workflow.ts", "src/settings/load-workflow.ts"],
  ["src/run/build-run-settings.ts", "src/settings/build-run-settings.ts"],
  ["src/run/plan-workflow-run.ts", "src/settings/plan-workflow-run.ts"],
  ["src/run/prepare-workflow-run.ts", "src/settings/prepare-workflow-run.ts"],
  ["src/run/hold-overrides.ts", "src/settings/hold-overrides.ts"],
  ["src/run/run-variables.ts", "src/settings/run-variables.ts"],
  ["src/run/tangled-variables.ts", "src/settings/tangled-variables.ts"],

  // dry-run: the calls a run, warm and credentials would make.
  ["src/plan/", "src/dry-run/"],

  // run: a run, its result and artifacts.
  ["src/result/", "src/run/"],
  ["src/artifacts/run-artifacts.ts", "src/run/run-artifacts.ts"],

  // ops: the operator's commands (warm stays a folder of its own below the executor, which claims and tops up placeholders).
  ["src/credentials/", "src/ops/credentials/"],
];
