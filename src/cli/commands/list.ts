// `list`: our runs and warm placeholders in the cluster: run id, phase, age, heartbeat age, owner, node, time left.
import { CLUSTER_OPTIONS, type RawClusterOptions } from "../cluster-options.js";
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";
import { runOperatorCommand } from "../operator-command.js";
import { listOurJobs, listOurPods, readAnsweredNamespace } from "../../ops/cluster-reads.js";
import { buildListRows, formatListJson, formatListTable } from "../../ops/list-runs.js";
import { indexLeases, INSTANCE_LEASE_SELECTOR } from "../../manifests/instance-lease.js";

interface RawListOptions extends RawClusterOptions {
  json?: boolean;
}

export const listCommand: CommandSpec<RawListOptions> = {
  name: "list",
  summary: "show this runner's runs and warm placeholders in the namespace",
  options: [...CLUSTER_OPTIONS, { flag: "--json", description: "print JSON instead of a table" }],
  execute: ({ options, ...io }) =>
    runOperatorCommand(options, io, async ({ cluster, target }) => {
      // Leases a credential may not read leave the INSTANCE column without their state.
      const [jobs, pods, leases] = await Promise.all([
        listOurJobs(cluster, target),
        listOurPods(cluster, target),
        cluster.listLeases(target.namespace, INSTANCE_LEASE_SELECTOR).catch(() => undefined),
      ]);
      const now = Date.now();
      const rows = buildListRows(jobs, pods, now, leases && indexLeases(leases, now));
      const namespace = readAnsweredNamespace(target, jobs);
      io.stdout.write(options.json ? formatListJson(rows, namespace) : formatListTable(rows, namespace));
      return EXIT.success;
    }),
};
