// The options every command that talks to a cluster takes, declared once, and their resolution into a ClusterTarget.
import { accessSync, constants } from "node:fs";
import { resolve } from "node:path";
import { InputError } from "../core/errors.js";
import type { ClusterTarget } from "../cluster/cluster.js";
import type { TransportName } from "../cluster/transports/open-cluster.js";
import { DNS_LABEL } from "../core/patterns.js";
import type { OptionSpec } from "./option-spec.js";

export const CLUSTER_OPTIONS: readonly OptionSpec[] = [
  { flag: "--namespace <ns>", description: "namespace (default: the kubeconfig context's, else default)" },
  { flag: "--kubeconfig <file>", description: "kubeconfig file (default: kubectl's own rules)" },
  { flag: "--context <name>", description: "kubeconfig context" },
  { flag: "--kubectl <path>", description: "kubectl binary (default: $KNOTLESS_KUBECTL, else kubectl on PATH)" },
  {
    flag: "--transport <kind>",
    description:
      "how to talk to the cluster: api (default: the Kubernetes API spoken in-process) or kubectl (one kubectl process per call: auth-provider plugins, impersonation, servers before 1.30)",
  },
];

export type { TransportName };

/** The cluster options as the CLI parser hands them over (strings, unvalidated). */
export interface RawClusterOptions {
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  kubectl?: string;
  transport?: string;
}

export interface ClusterConfig {
  /** Where kubectl points; `namespace` is absent (and `namespaceFromContext` set) when it is the context's. */
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
  readonly transport: TransportName;
}

/** Reads --transport: api (the default) or kubectl; anything else is bad input. */
export function resolveTransport(raw: string | undefined): TransportName {
  if (raw === undefined || raw === "api") return "api";
  if (raw === "kubectl") return "kubectl";
  throw new InputError(`--transport expects kubectl or api, got ${JSON.stringify(raw)}`);
}

/** Checks a namespace name; throws InputError naming the flag. */
export function checkNamespace(namespace: string, flag = "--namespace"): string {
  if (!DNS_LABEL.test(namespace))
    throw new InputError(`${flag} expects a DNS-1123 label (lowercase letters, digits, '-'), got "${namespace}"`);
  return namespace;
}

/** A --kubeconfig that cannot be read is bad input, before kubectl is asked anything. */
export function checkKubeconfigReadable(raw: RawClusterOptions): void {
  if (!raw.kubeconfig) return;
  try {
    accessSync(raw.kubeconfig, constants.R_OK);
  } catch {
    throw new InputError(`--kubeconfig: cannot read ${resolve(raw.kubeconfig)}`);
  }
}

/**
 * Validates the cluster options (a transport this build lacks, a kubeconfig that cannot be read, a malformed
 * namespace: InputError) and resolves
 * the kubectl binary: --kubectl, else $KNOTLESS_KUBECTL, else kubectl on PATH. `namespace` overrides the flag (a dry
 * run passes the one it read from the kubeconfig); without either the namespace is left to kubectl.
 */
export function resolveClusterOptions(
  raw: RawClusterOptions,
  env: NodeJS.ProcessEnv,
  namespace: string | undefined = raw.namespace,
): ClusterConfig {
  const transport = resolveTransport(raw.transport);
  checkKubeconfigReadable(raw);
  if (namespace !== undefined) checkNamespace(namespace);
  return {
    target: {
      ...(namespace === undefined ? {} : { namespace }),
      ...(raw.namespace === undefined ? { namespaceFromContext: true } : {}),
      ...(raw.kubeconfig ? { kubeconfig: resolve(raw.kubeconfig) } : {}),
      ...(raw.context ? { context: raw.context } : {}),
    },
    kubectlPath: raw.kubectl ?? env.KNOTLESS_KUBECTL ?? "kubectl",
    transport,
  };
}
