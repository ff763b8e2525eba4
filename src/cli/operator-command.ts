// What the operator commands (doctor, cancel, gc, list) share: their cluster and kubectl, and errors mapped to exit codes.
import { describeError } from "../errors.js";
import type { ClusterTarget } from "../cluster/kubectl/kubectl-args.js";
import type { Kubectl } from "../cluster/kubectl/kubectl.js";
import { resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import { exitCodeForError } from "./exit-codes.js";

/** What an operator command runs with, resolved from its options at the edge. */
export interface OperatorContext {
  readonly target: ClusterTarget;
  readonly kubectl: Kubectl;
  readonly kubectlPath: string;
}

/**
 * Resolves the cluster options (bad input throws before kubectl is made), then runs `work` with the kubectl client;
 * an error it throws is printed on stderr and mapped to its exit code (InputError 2, InfraError 3).
 */
export async function runOperatorCommand(raw: RawClusterOptions, env: NodeJS.ProcessEnv, work: (ctx: OperatorContext) => Promise<number>): Promise<number> {
  try {
    const cluster = resolveClusterOptions(raw, env);
    const { Kubectl } = await import("../cluster/kubectl/kubectl.js");
    return await work({ target: cluster.target, kubectl: new Kubectl({ binary: cluster.kubectlPath, env }), kubectlPath: cluster.kubectlPath });
  } catch (error) {
    process.stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}
