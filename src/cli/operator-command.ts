// What the operator commands (doctor, cancel, gc, list) share: their cluster, and errors mapped to exit codes.
import { describeError } from "../core/errors.js";
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import { openCluster } from "../cluster/transports/open-cluster.js";
import { resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import type { CommandIo } from "./command-spec.js";
import { exitCodeForError } from "./exit-codes.js";

/** What an operator command runs with, resolved from its options at the edge. */
export interface OperatorContext {
  readonly target: ClusterTarget;
  readonly cluster: Cluster;
  readonly kubectlPath: string;
}

/**
 * Resolves the cluster options and reads the command's own input with `readInput` (bad input throws before the
 * cluster is made: the API transport reads the kubeconfig when it opens), then runs `work` with the cluster and that
 * input; an error either throws is printed on stderr and mapped to its exit code (InputError 2, InfraError 3).
 */
export async function runOperatorCommand<T = undefined>(
  raw: RawClusterOptions,
  { env, stderr }: CommandIo,
  work: (ctx: OperatorContext, input: T) => Promise<number>,
  readInput: () => T = () => undefined as T,
): Promise<number> {
  try {
    const setting = resolveClusterOptions(raw, env);
    const input = readInput();
    const { cluster } = await openCluster(setting, env);
    return await work({ target: setting.target, cluster, kubectlPath: setting.kubectlPath }, input);
  } catch (error) {
    stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}
