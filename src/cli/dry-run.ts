// Prints what a run would do: the resolved workflow, the Job manifest and every call, as the chosen transport makes it (API request or kubectl command) with the other beside it; spawns nothing and shows no secret value.
import { formatByteQuantity } from "../core/format-bytes.js";
import { formatDuration } from "../core/duration.js";
import { buildRunManifest } from "../executor/kubernetes/kubernetes-executor.js";
import { DEFAULT_POD_IDLE_SECONDS } from "../pod/keep-alive.js";
import { buildPlaceholderManifest } from "../manifests/placeholder-manifest.js";
import { RESTRICTED_UID } from "../manifests/security-context.js";
import { PLANNED_PLACEHOLDER, planKubectlCalls } from "../dry-run/call-plan.js";
import { formatPlannedCalls } from "../cluster/transports/format-calls.js";

export { formatPlannedCalls } from "../cluster/transports/format-calls.js";
import type { RunCommand } from "./resolve-run-command.js";
import { scanUploadTrees } from "../transfer/scan-tree.js";

/** Validates like a run (the checkout and shared steps are scanned: an unreadable file is a ScanError), then renders. */
export async function renderDryRun(config: RunCommand): Promise<string> {
  if (!config.skipsCheckout) scanUploadTrees(config.settings.checkoutDir, config.settings.sharedStepsDir);
  const lines = describeResolvedRun(config);
  if (config.notMatched) {
    lines.push(
      "# The workflow does not match the trigger: the run would write result.json (status skipped) and make no kubectl call.",
    );
    return `${lines.join("\n")}\n`;
  }
  // The YAML printer loads only for a dry run that prints a manifest: ~80 ms of CPU a real run need not pay.
  const { stringify } = await import("yaml");
  const manifest = buildRunManifest(config, "<random per run>");
  lines.push("# Job manifest", "---", stringify(manifest).trimEnd(), "---");
  const { keepWarm, target, image, cpu, memory } = config.settings;
  if (keepWarm) {
    const placeholder = buildPlaceholderManifest({
      name: PLANNED_PLACEHOLDER,
      ...(target.namespaceFromContext ? {} : { namespace: target.namespace }),
      image,
      cpu,
      memory,
      seconds: keepWarm.seconds,
      ...(config.settings.pod ? { pod: config.settings.pod } : {}),
    });
    lines.push(
      "# Warm placeholder manifest (--keep-warm), left after the Job is deleted",
      "---",
      stringify(placeholder).trimEnd(),
      "---",
    );
  }
  lines.push(
    ...formatPlannedCalls(
      config.kubectlPath,
      config.settings.target,
      planKubectlCalls(config.settings, config.timings),
      config.transport,
    ),
  );
  return `${lines.join("\n")}\n`;
}

/** The run as resolved: where its steps come from, image, trigger match, budgets, variables and secrets by name. */
function describeResolvedRun(config: RunCommand): string[] {
  const { settings } = config;
  const workflow = settings.workflow;
  const lines = ["# Run"];
  if (workflow) {
    lines.push(`#   workflow: ${workflow.file} (${workflow.name}), engine ${workflow.engine}`);
    const trigger = workflow.trigger;
    lines.push(
      trigger
        ? `#   trigger: event ${trigger.event}${[
            trigger.ref,
            trigger.branch && `branch ${trigger.branch}`,
            trigger.tag && `tag ${trigger.tag}`,
            trigger.sha && `sha ${trigger.sha}`,
            trigger.repo && `repo ${trigger.repo}`,
            trigger.prAction && `action ${trigger.prAction}`,
            trigger.changedFileCount !== undefined &&
              `${trigger.changedFileCount} changed ${trigger.changedFileCount === 1 ? "file" : "files"}`,
          ]
            .filter(Boolean)
            .map((part) => `, ${part}`)
            .join("")}: ${trigger.matched ? "matches" : "does not match"} (${trigger.reason})`
        : "#   trigger: none given (--event): `when` is not evaluated, the workflow runs",
    );
    const clone = workflow.clone;
    lines.push(
      `#   clone: ${clone.skip ? "skip (no checkout upload)" : "the checkout is uploaded to /work"}${clone.depth !== undefined ? `, depth ${clone.depth}` : ""}, submodules ${clone.submodules ? "yes" : "no"}, tags ${clone.tags ? "yes" : "no"} (the caller prepares the checkout)`,
    );
  }
  lines.push(`#   image: ${settings.image}${workflow ? ` (from ${describeImageSource(workflow)})` : ""}`);
  const { nodeSelector, runtimeClassName } = settings.placement ?? {};
  if (nodeSelector || runtimeClassName) {
    lines.push(
      `#   placement: ${[...Object.entries(nodeSelector ?? {}).map(([key, value]) => `node selector ${key}=${value}`), ...(runtimeClassName ? [`runtimeClassName ${runtimeClassName}`] : [])].join(", ")}`,
    );
  }
  for (const service of settings.services ?? []) {
    const readiness =
      service.readiness === undefined
        ? "ready once running"
        : service.readiness.kind === "tcp"
          ? `ready when tcp ${service.readiness.port} accepts`
          : `ready when \`${service.readiness.command.join(" ")}\` exits 0`;
    const ports = service.ports.length > 0 ? `, localhost:${service.ports.join(", localhost:")}` : "";
    lines.push(
      `#   service ${service.name}: ${service.image}${ports}; ${readiness}, within ${formatDuration(service.readinessTimeoutMs)}; a native sidecar on Kubernetes >= 1.29, else a container beside the steps`,
    );
  }
  if (settings.dockerDaemon)
    lines.push(
      `#   docker: a privileged Docker daemon (${settings.dockerDaemon.image}) beside the steps, DOCKER_HOST set (virtualisation.docker)`,
    );
  for (const clamp of config.clamped) lines.push(`#   limit: ${clamp}`);
  const storage = settings.ephemeralStorage;
  if (storage)
    lines.push(
      `#   ephemeral storage: ${[storage.request ? `request ${storage.request}` : "", storage.limit ? `limit ${storage.limit} (past it the kubelet evicts the pod)` : ""].filter(Boolean).join(", ")} (pod.ephemeralStorage)`,
    );
  lines.push(...describePodConfig(settings.pod));
  lines.push(
    `#   disruption budget: ${settings.disruptionBudget ? "a PodDisruptionBudget of the run (maxUnavailable 0): a node drain waits for the run" : "none (pod.disruptionBudget: false): a node drain may evict the run's pod"}`,
  );
  lines.push(
    `#   resources: cpu ${settings.cpu}, memory ${settings.memory}; run timeout ${formatDuration(settings.timeoutMs)}; shell ${settings.shell ?? "sh -e"}`,
  );
  lines.push(
    `#   pod idle timeout: ${formatDuration(settings.podIdleTimeoutMs ?? DEFAULT_POD_IDLE_SECONDS * 1000)} (the pod stops itself when no runner exec has run for that long)`,
  );
  if (!config.notMatched) {
    for (const [index, step] of settings.steps.entries()) {
      const budget = step.timeoutMs ?? settings.stepTimeoutMs;
      const names = (step.env ?? []).map((variable) => variable.name);
      lines.push(
        `#   step ${index + 1}: ${step.name} (${step.source}); timeout ${budget === undefined ? "the rest of the run's" : formatDuration(budget)}${names.length ? `; variables ${names.join(", ")}` : ""}`,
      );
    }
  }
  if (!config.notMatched) lines.push(...describeCaches(config), ...describeArtifacts(config));
  lines.push(
    `#   variables (values in the pod only): ${settings.env.map((variable) => variable.name).join(", ") || "none"}`,
  );
  lines.push(
    `#   secrets (masked in all output, never shown): ${(settings.secrets ?? []).map((secret) => secret.name).join(", ") || "none"}`,
  );
  return lines;
}

/** The operator's pod keys (`pod` of --config), one line each; the manifest below shows them in place. */
function describePodConfig(pod: RunCommand["settings"]["pod"]): string[] {
  if (!pod) return [];
  const pairs = (map: Readonly<Record<string, string>> | undefined): string =>
    Object.entries(map ?? {})
      .map(([key, value]) => `${key}=${value}`)
      .join(", ");
  const lines = [
    `#   pod security: ${pod.security ?? "default"}${pod.security === "restricted" ? ` (Pod Security Standard "restricted": uid ${RESTRICTED_UID}, no capability)` : " (root with few capabilities, no privilege escalation)"}`,
  ];
  if (pod.nodeSelector) lines.push(`#   pod.nodeSelector: ${pairs(pod.nodeSelector)}`);
  if (pod.tolerations)
    lines.push(
      `#   pod.tolerations: ${pod.tolerations.map((t) => `${t.key ?? "*"}${t.operator === "Exists" ? "" : `=${t.value ?? ""}`}${t.effect ? `:${t.effect}` : ""}`).join(", ")}`,
    );
  if (pod.affinity) lines.push(`#   pod.affinity: ${Object.keys(pod.affinity).join(", ")}`);
  if (pod.priorityClassName) lines.push(`#   pod.priorityClassName: ${pod.priorityClassName}`);
  if (pod.runtimeClassName) lines.push(`#   pod.runtimeClassName: ${pod.runtimeClassName}`);
  if (pod.labels) lines.push(`#   pod.labels: ${pairs(pod.labels)}`);
  if (pod.annotations) lines.push(`#   pod.annotations: ${Object.keys(pod.annotations).join(", ")}`);
  if (pod.imagePullSecrets)
    lines.push(
      `#   pod.imagePullSecrets: ${pod.imagePullSecrets.join(", ")} (Secrets the kubelet pulls with; the runner never reads them)`,
    );
  if (pod.podSpecPatch)
    lines.push(`#   pod.podSpecPatch: ${Object.keys(pod.podSpecPatch).join(", ")} (strategic merge, applied last)`);
  return lines;
}

function describeImageSource(workflow: NonNullable<RunCommand["settings"]["workflow"]>): string {
  if (workflow.imageFrom === "flag") return "--image";
  if (workflow.imageFrom === "default") return "the runner's default";
  if (workflow.imageFrom === "nixery") return "the nixery engine";
  if (workflow.imageFrom === "microvm")
    return `the microvm image ${workflow.imageName ?? "?"} in the runner configuration`;
  return "the workflow";
}

const REPO_FROM = {
  "--repo": "--repo",
  checkout: "no --repo: from the checkout's absolute path",
  workflow: "no --repo: from the workflow file's absolute path",
} as const;

/** The caches as rendered: each key, its fallbacks and paths, and the store they would be restored from and saved to. */
function describeCaches(config: RunCommand): string[] {
  const declared = config.caches;
  if (declared === undefined) return [];
  const plural = declared.declared === 1 ? "cache" : "caches";
  if (declared.off)
    return [
      `#   caches: off (--no-cache): the workflow's ${declared.declared} ${plural} are neither restored nor saved`,
    ];
  const { caches = [], cacheBackend } = config.settings;
  if (cacheBackend === undefined) return [];
  const store =
    cacheBackend.kind === "dir"
      ? `the directory ${cacheBackend.dir} on this host`
      : `the PersistentVolumeClaim ${cacheBackend.claim}, mounted into the pod`;
  const lines = [
    `#   caches: ${caches.length} ${plural} in ${store}, at most ${formatByteQuantity(cacheBackend.maxBytes)}; repository ${cacheBackend.repo} (${REPO_FROM[declared.repoFrom]})`,
  ];
  for (const [index, cache] of caches.entries()) {
    const fallbacks =
      cache.restoreKeys.length > 0 ? cache.restoreKeys.map((prefix) => JSON.stringify(prefix)).join(", ") : "none";
    lines.push(
      `#   cache ${index + 1}: key ${JSON.stringify(cache.key)}; fallback prefixes ${fallbacks}; paths ${cache.paths.join(", ")}`,
    );
  }
  return lines;
}

/** The artifacts: each name, its patterns, when it is collected and whether matching nothing fails the run. */
function describeArtifacts(config: RunCommand): string[] {
  return (config.settings.artifacts ?? []).map(
    (artifact, index) =>
      `#   artifact ${index + 1}: ${artifact.name} (into artifacts/${artifact.name}/): ${artifact.paths.join(", ")}; when ${artifact.when}; ${artifact.required ? "required: matching nothing fails the run" : "matching nothing is a warning"}`,
  );
}
