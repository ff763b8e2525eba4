// What the operator commands (doctor, cancel, gc, list) share: their cluster, and errors mapped to exit codes.
import { describeError } from "../errors.js";
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import { openCluster } from "../cluster/open-cluster.js";
import { resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import { exitCodeForError } from "./exit-codes.js";

/** What an operator command runs with, resolved from its options at the edge. */
export interface OperatorContext {
  readonly target: ClusterTarget;
  readonly cluster: Cluster;
  readonly kubectlPath: string;
}

/**
 * Resolves the cluster options (bad input throws before the cluster is made), then runs `work` with the cluster;
 * an error it throws is printed on stderr and mapped to its exit code (InputError 2, InfraError 3).
 */
export async function runOperatorCommand(raw: RawClusterOptions, env: NodeJS.ProcessEnv, work: (ctx: OperatorContext) => Promise<number>): Promise<number> {
  try {
    const setting = resolveClusterOptions(raw, env);
    const { cluster } = await openCluster(setting, env);
    return await work({ target: setting.target, cluster, kubectlPath: setting.kubectlPath });
  } catch (error) {
    process.stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}
