// `cancel RUN_ID`: asks a running run to stop, through the cluster, from this host or any other.
import { InputError } from "../../core/errors.js";
import { isAcceptableRunId } from "../../manifests/names.js";
import { CLUSTER_OPTIONS, type RawClusterOptions } from "../cluster-options.js";
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";
import { runOperatorCommand } from "../operator-command.js";
import { resolveProcessIdentity } from "../process-identity.js";
import { DEFAULT_STALE_AFTER_MS } from "./gc.js";
import { requestRunCancel } from "../../ops/cancel-run.js";

export const cancelCommand: CommandSpec<RawClusterOptions> = {
  name: "cancel",
  summary:
    "stop a run from another process: its runner stops the step, collects the outputs, deletes the Job and exits 130",
  arguments: "<run-id>",
  options: CLUSTER_OPTIONS,
  execute: ({ options, args, ...io }) =>
    runOperatorCommand(
      options,
      io,
      async ({ cluster, target }, runId) => {
        const outcome = await requestRunCancel(cluster, target, {
          runId,
          requester: resolveProcessIdentity(),
          staleAfterMs: DEFAULT_STALE_AFTER_MS,
        });
        io.stdout.write(`${outcome.message}\n`);
        if (outcome.warning) io.stderr.write(`knotless-runner-k8s: warning: ${outcome.warning}\n`);
        return EXIT.success;
      },
      () => {
        const runId = args[0] ?? "";
        if (!isAcceptableRunId(runId))
          throw new InputError(
            `cancel expects the run's id (1 to 128 printable characters without spaces), got ${JSON.stringify(runId)}`,
          );
        return runId;
      },
    ),
};
