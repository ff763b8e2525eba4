// `doctor`: one line per check (kubectl, cluster, namespace, permissions, credential, nodes) before any run; exit 3 when one fails.
import { CLUSTER_OPTIONS, type RawClusterOptions } from "../cluster-options.js";
import type { CommandSpec } from "../command-spec.js";
import { EXIT } from "../exit-codes.js";
import { runOperatorCommand } from "../operator-command.js";

interface RawDoctorOptions extends RawClusterOptions {
  json?: boolean;
}

export const doctorCommand: CommandSpec<RawDoctorOptions> = {
  name: "doctor",
  summary: "check kubectl, the cluster, the namespace, every permission a run needs, the credential and the nodes",
  options: [...CLUSTER_OPTIONS, { flag: "--json", description: "print JSON instead of one line per check" }],
  execute: ({ options, env }) =>
    runOperatorCommand(options, env, async ({ kubectl, target }) => {
      const { DEFAULT_DOCTOR_OPTIONS, formatDoctorJson, formatDoctorReport, runDoctor } = await import("../../ops/doctor/run-doctor.js");
      const report = await runDoctor(kubectl, { ...DEFAULT_DOCTOR_OPTIONS, target });
      process.stdout.write(options.json ? formatDoctorJson(report) : formatDoctorReport(report));
      return report.checks.some((check) => check.status === "fail") ? EXIT.infrastructure : EXIT.success;
    }),
};
