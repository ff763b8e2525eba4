// `credentials`: issues (or --revoke removes) the runner's scoped identity in one namespace, with an admin kubeconfig, and writes its kubeconfig.
import { resolve } from "node:path";
import { InputError, describeError } from "../../core/errors.js";
import { readDuration } from "../../core/duration.js";
import { DNS_LABEL } from "../../core/patterns.js";
import {
  DEFAULT_CREDENTIAL_NAME,
  MIN_TOKEN_SECONDS,
  type CredentialIdentity,
} from "../../ops/credentials/credential-objects.js";
import type { CredentialRequest } from "../../ops/credentials/credential-plan.js";
import type { ClusterTarget } from "../../cluster/cluster.js";
import {
  CLUSTER_OPTIONS,
  resolveClusterOptions,
  type RawClusterOptions,
  type TransportName,
} from "../cluster-options.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import { EXIT, exitCodeForError } from "../exit-codes.js";
import type { OptionSpec } from "../option-spec.js";
import { openCluster } from "../../cluster/transports/open-cluster.js";
import { checkPrivateTarget } from "../../ops/credentials/private-file.js";
import * as report from "../../ops/credentials/format-report.js";
import { revokeCredentials } from "../../ops/credentials/revoke-credentials.js";
import { issueCredentials } from "../../ops/credentials/issue-credentials.js";

export const CREDENTIALS_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--namespace <ns>",
    description: "the namespace the runner's Jobs go to; the identity can touch nothing outside it",
    required: true,
  },
  {
    flag: "--out <file>",
    description:
      "where the scoped kubeconfig is written, mode 0600 (an existing file must already be private); with --revoke, removed",
  },
  {
    flag: "--name <name>",
    description: "name of the ServiceAccount, Role and RoleBinding",
    defaultValue: DEFAULT_CREDENTIAL_NAME,
  },
  { flag: "--duration <duration>", description: "lifetime of the token, 10m to 168h", defaultValue: "24h" },
  {
    flag: "--revoke",
    description:
      "delete the ServiceAccount, Role and RoleBinding (every token dies with the ServiceAccount), and the --out file",
  },
  {
    flag: "--dry-run",
    description: "print every object and call, as API requests and kubectl commands (never a token); touch nothing",
  },
  ...CLUSTER_OPTIONS.filter((option) => !option.flag.startsWith("--namespace ")),
];

export interface RawCredentialsOptions extends RawClusterOptions {
  namespace: string;
  out?: string;
  name: string;
  duration: string;
  revoke?: boolean;
  dryRun?: boolean;
}

/** The command's input, validated: nothing reaches the cluster before all of it is known good. */
interface CredentialsCommand {
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
  readonly transport: TransportName;
  readonly identity: CredentialIdentity;
  readonly tokenSeconds: number;
  readonly outFile: string | undefined;
  readonly revoke: boolean;
  readonly dryRun: boolean;
}

/** Validates the options (InputError naming the flag) and resolves the cluster options like every command. */
export function resolveCredentialsCommand(raw: RawCredentialsOptions, env: NodeJS.ProcessEnv): CredentialsCommand {
  const cluster = resolveClusterOptions(raw, env);
  if (!DNS_LABEL.test(raw.name))
    throw new InputError(`--name expects a DNS-1123 label (lowercase letters, digits, '-'), got "${raw.name}"`);
  const ms = readDuration(raw.duration, "--duration");
  if (ms % 1000 !== 0) throw new InputError(`--duration expects whole seconds, got "${raw.duration}"`);
  if (ms / 1000 < MIN_TOKEN_SECONDS)
    throw new InputError(
      `--duration expects at least 10m (the TokenRequest API refuses shorter tokens), got "${raw.duration}"`,
    );
  if (!raw.revoke && raw.out === undefined)
    throw new InputError("--out is required: where the scoped kubeconfig is written");
  return {
    target: { ...cluster.target, namespace: raw.namespace, namespaceFromContext: false },
    kubectlPath: cluster.kubectlPath,
    transport: cluster.transport,
    identity: { namespace: raw.namespace, name: raw.name },
    tokenSeconds: ms / 1000,
    outFile: raw.out === undefined ? undefined : resolve(raw.out),
    revoke: raw.revoke ?? false,
    dryRun: raw.dryRun ?? false,
  };
}

export const credentialsCommand: CommandSpec<RawCredentialsOptions> = {
  name: "credentials",
  summary:
    "with an admin kubeconfig: make the runner's minimal identity in one namespace (ServiceAccount, Role, RoleBinding, token) and write its kubeconfig; --revoke removes it",
  options: CREDENTIALS_OPTIONS,
  execute: ({ options, ...io }) => executeCredentials(options, io),
};

/** Runs the command; returns the exit code. `env` is read here and nowhere below. */
export async function executeCredentials(
  options: RawCredentialsOptions,
  { env, stdout, stderr }: CommandIo,
): Promise<number> {
  try {
    const config = resolveCredentialsCommand(options, env);
    if (!config.revoke) checkPrivateTarget(config.outFile!);
    if (config.dryRun) {
      stdout.write(
        config.revoke
          ? report.renderRevokeDryRun(
              config.target,
              config.identity,
              config.kubectlPath,
              config.outFile,
              config.transport,
            )
          : report.renderIssueDryRun(toRequest(config), config.kubectlPath, config.transport),
      );
      return EXIT.success;
    }
    const { cluster } = await openCluster(config, env);
    if (config.revoke) {
      stdout.write(
        report.formatRevokeReport(
          await revokeCredentials(cluster, config.target, config.identity, config.outFile),
          config.identity,
        ),
      );
    } else {
      stdout.write(report.formatIssueReport(await issueCredentials(cluster, toRequest(config)), config.identity));
    }
    return EXIT.success;
  } catch (error) {
    stderr.write(`knotless-runner-k8s: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}

function toRequest(config: CredentialsCommand): CredentialRequest {
  return {
    target: config.target,
    identity: config.identity,
    tokenSeconds: config.tokenSeconds,
    outFile: config.outFile!,
  };
}
