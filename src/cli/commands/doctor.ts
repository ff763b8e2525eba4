// `doctor`: one line per check (kubectl, cluster, namespace, permissions, credential, nodes) before any run; exit 3 when one fails.
import { CLUSTER_OPTIONS, type RawClusterOptions } from "../cluster-options.js";
import type { CommandSpec } from "../command-spec.js";
import { DNS_LABEL } from "../../core/patterns.js";
import { InputError } from "../../core/errors.js";
import { EXIT } from "../exit-codes.js";
import { runOperatorCommand } from "../operator-command.js";
import {
  DEFAULT_DOCTOR_OPTIONS,
  formatDoctorJson,
  formatDoctorReport,
  runDoctor,
} from "../../ops/doctor/run-doctor.js";

interface RawDoctorOptions extends RawClusterOptions {
  json?: boolean;
  cachePvc?: string;
}

export const doctorCommand: CommandSpec<RawDoctorOptions> = {
  name: "doctor",
  summary: "check kubectl, the cluster, the namespace, every permission a run needs, the credential and the nodes",
  options: [
    ...CLUSTER_OPTIONS,
    { flag: "--json", description: "print JSON instead of one line per check" },
    {
      flag: "--cache-pvc <name>",
      description: "also check the PVC cache backend's claim: it exists, is Bound, and which nodes can mount it",
    },
  ],
  execute: ({ options, ...io }) =>
    runOperatorCommand(
      options,
      io,
      async ({ cluster, target }) => {
        const report = await runDoctor(cluster, {
          ...DEFAULT_DOCTOR_OPTIONS,
          target,
          ...(options.cachePvc === undefined ? {} : { cacheClaim: options.cachePvc }),
        });
        io.stdout.write(options.json ? formatDoctorJson(report) : formatDoctorReport(report));
        return report.checks.some((check) => check.status === "fail") ? EXIT.infrastructure : EXIT.success;
      },
      () => {
        // As `run` checks it (src/cli/cache-options.ts), before the cluster is opened.
        if (options.cachePvc !== undefined && !DNS_LABEL.test(options.cachePvc))
          throw new InputError(
            `--cache-pvc expects a PersistentVolumeClaim name (a DNS-1123 label such as ci-cache), got ${JSON.stringify(options.cachePvc)}`,
          );
      },
    ),
};
