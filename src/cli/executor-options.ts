// The `executor` command's options, declared once, and their resolution into a checked ExecutorCommand (bad input refused before anything dials or calls a cluster).
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { readDuration } from "../core/duration.js";
import { readSize } from "../core/patterns.js";
import { InputError } from "../core/errors.js";
import type { LogStoreSetting } from "../mill/log-store.js";
import type { MillTimings } from "../mill/mill-session.js";
import type { RunDefaults } from "../serve/prepare-submission.js";
import type { ServeTransport } from "../serve/cluster-transport.js";
import { readTokenFile } from "../serve/bearer-auth.js";
import { readRunnerConfig } from "../config/read-runner-config.js";
import { CLUSTER_OPTIONS, resolveClusterOptions, type RawClusterOptions } from "./cluster-options.js";
import type { OptionSpec } from "./option-spec.js";
import { applyPodFlags, POD_OPTIONS, type RawPodOptions } from "./pod-options.js";
import { readPodIdleTimeout } from "./pod-idle-timeout.js";
import { resolveProcessIdentity } from "./process-identity.js";
import { readKeepWarm } from "./warm-options.js";

export const EXECUTOR_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "--mill <url>",
    description: "the mill's WebSocket endpoint, wss://HOST/mill (ws:// only with --insecure-mill)",
    required: true,
  },
  {
    flag: "--token-file <file>",
    description: "the token `spindle mill executor add` printed (the file must be readable by its owner only)",
    required: true,
  },
  {
    flag: "--state-dir <dir>",
    description:
      "the executor's state: mill-executor.sqlite (epoch, outbox), each lease's log as it is written, each run's files",
    required: true,
  },
  {
    flag: "--log-store <dir|s3://bucket/prefix>",
    description:
      "where finished logs go, shared with the mill: a directory, or an S3 bucket (endpoint, region and credentials from AWS_* or the --s3-* flags)",
    required: true,
  },
  {
    flag: "--labels <a,b>",
    description: "the labels Hello offers (a subset of the token's labels); workflows' runs_on is matched against them",
  },
  { flag: "--max-runs <n>", description: "seats: most leases reserved or running at once", defaultValue: "4" },
  {
    flag: "--drain-timeout <duration>",
    description:
      "on SIGTERM, how long running leases may finish before they are cancelled (a second SIGTERM cancels at once)",
    defaultValue: "10m",
  },
  {
    flag: "--outbox-max-bytes <size>",
    description:
      "most bytes of events (protobuf, as the mill gets them) not yet acknowledged: past it RUNNING statuses are dropped and reservations refused TRANSIENT; terminals are always kept (at least 1Ki)",
    defaultValue: "10Mi",
  },
  {
    flag: "--metrics-listen <host:port>",
    description: "serve Prometheus /metrics here (no token: bind it to a private address)",
  },
  {
    flag: "--architectures <list>",
    description:
      "the node architectures the cluster has (amd64,arm64); a workflow asking for another is refused INCOMPATIBLE (default: any)",
  },
  {
    flag: "--insecure-mill",
    description: "allow a ws:// mill URL (the token crosses the network in clear): for a loopback test",
  },
  {
    flag: "--mill-ca <file>",
    description:
      "a PEM bundle of the CA certificates the mill's wss:// certificate is checked against, instead of the public ones: for a private mill",
  },
  {
    flag: "--s3-endpoint <url>",
    description:
      "an S3-compatible endpoint for an s3:// --log-store (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS)",
  },
  {
    flag: "--s3-region <region>",
    description: "the bucket's region (default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1)",
  },
  {
    flag: "--s3-path-style",
    description: "address the bucket by path (MinIO, Garage, s3rver) instead of by host name",
  },
  { flag: "--pod-timeout <duration>", description: "how long a run's pod may stay Pending", defaultValue: "15m" },
  {
    flag: "--pod-idle-timeout <duration>",
    description:
      "each run's pod stops itself after this long without a runner exec, e.g. once the executor died (default 10m, at least 15s)",
  },
  {
    flag: "--max-output-bytes <size>",
    description: "most bytes taken back from each run's /outputs",
    defaultValue: "512Mi",
  },
  { flag: "--max-log-bytes <size>", description: "most bytes of step output each run keeps", defaultValue: "16Mi" },
  {
    flag: "--keep-warm <duration>",
    description: "after each run's Job is deleted, leave a placeholder that keeps its node for this long",
  },
  {
    flag: "--max-warm <n>",
    description: "most warm placeholders in the namespace, for --keep-warm",
    defaultValue: "1",
  },
  { flag: "--skip-warm", description: "do not look for a warm placeholder to claim" },
  { flag: "--nixery <url>", description: "the Nixery registry that composes the image of a nixery workflow" },
  {
    flag: "--config <file>",
    description:
      "the runner configuration (YAML) every workflow is held to: limits, microvm images, allowPrivileged, the pod's settings",
  },
  {
    flag: "--git <path>",
    description:
      "the git binary that clones a commit on this host when the run's image has no git (default: git on PATH)",
  },
  ...POD_OPTIONS,
  ...CLUSTER_OPTIONS.map((option) =>
    option.flag.startsWith("--transport ")
      ? {
          ...option,
          description: "how to talk to the cluster: api (default: the Kubernetes API spoken in-process) or kubectl",
        }
      : option,
  ),
];

/** Options exactly as the CLI parser hands them over. */
export interface RawExecutorOptions extends RawClusterOptions, RawPodOptions {
  mill?: string;
  tokenFile?: string;
  stateDir?: string;
  logStore?: string;
  labels?: string;
  maxRuns: string;
  drainTimeout: string;
  outboxMaxBytes: string;
  metricsListen?: string;
  architectures?: string;
  insecureMill?: boolean;
  millCa?: string;
  s3Endpoint?: string;
  s3Region?: string;
  s3PathStyle?: boolean;
  podTimeout: string;
  podIdleTimeout?: string;
  maxOutputBytes: string;
  maxLogBytes: string;
  keepWarm?: string;
  maxWarm: string;
  skipWarm?: boolean;
  nixery?: string;
  config?: string;
  git?: string;
}

/** Everything `executor` runs with, resolved at the CLI edge. */
export interface ExecutorCommand {
  readonly millUrl: string;
  /** --mill-ca: the PEM certificates the mill's TLS certificate must chain to (absent: Node's public roots). */
  readonly millCa?: string;
  readonly token: string;
  readonly stateDir: string;
  readonly logStore: LogStoreSetting;
  readonly labels: readonly string[];
  readonly maxRuns: number;
  readonly drainTimeoutMs: number;
  /** --outbox-max-bytes: the outbox's cap, in encoded bytes (spindle's 10 MiB by default). */
  readonly outboxMaxBytes: number;
  readonly metricsListen?: { readonly host: string; readonly port: number };
  readonly architectures?: readonly string[];
  readonly arch: string;
  readonly defaults: RunDefaults;
  readonly transport: ServeTransport;
  /** From KNOTLESS_MILL_TIMINGS (JSON), for tests: shorter snapshots, backoff, cancel grace. */
  readonly timings?: Partial<MillTimings>;
}

/** Node's process.arch in Go's words, as Hello says it. */
export function describeArch(arch: string): string {
  return arch === "x64" ? "amd64" : arch === "ia32" ? "386" : arch;
}

/** Validates every option; throws InputError naming the flag. Reads the token file; dials nothing, calls no cluster. */
export async function resolveExecutorCommand(
  raw: RawExecutorOptions,
  env: NodeJS.ProcessEnv,
): Promise<ExecutorCommand> {
  for (const [value, flag] of [
    [raw.mill, "--mill"],
    [raw.tokenFile, "--token-file"],
    [raw.stateDir, "--state-dir"],
    [raw.logStore, "--log-store"],
  ] as const) {
    if (!value) throw new InputError(`missing required option ${flag}`);
  }
  const millUrl = readMillUrl(raw.mill!, raw.insecureMill ?? false);
  const millCa = raw.millCa === undefined ? undefined : readMillCa(resolve(raw.millCa), millUrl);
  const token = readTokenFile(resolve(raw.tokenFile!));
  const labels = (raw.labels ?? "")
    .split(",")
    .map((label) => label.trim())
    .filter((label, index, all) => label !== "" && all.indexOf(label) === index);
  const maxRuns = Number(raw.maxRuns);
  if (!/^\d+$/.test(raw.maxRuns) || maxRuns < 1 || maxRuns > 1000)
    throw new InputError(`--max-runs expects a whole number from 1 to 1000, got ${JSON.stringify(raw.maxRuns)}`);
  const architectures = raw.architectures
    ?.split(",")
    .map((arch) => arch.trim())
    .filter((arch) => arch !== "");
  const cluster = resolveClusterOptions({ ...raw, transport: raw.transport ?? "api" }, env);
  const runner = applyPodFlags(await readRunnerConfig(raw.config === undefined ? undefined : resolve(raw.config)), raw);
  return {
    millUrl,
    ...(millCa !== undefined ? { millCa } : {}),
    token,
    stateDir: resolve(raw.stateDir!),
    logStore: readLogStore(raw, env),
    labels,
    maxRuns,
    drainTimeoutMs: readDuration(raw.drainTimeout, "--drain-timeout"),
    outboxMaxBytes: readOutboxMaxBytes(raw.outboxMaxBytes),
    ...(raw.metricsListen !== undefined ? { metricsListen: readHostPort(raw.metricsListen, "--metrics-listen") } : {}),
    ...(architectures && architectures.length > 0 ? { architectures } : {}),
    arch: describeArch(process.arch),
    defaults: {
      target: cluster.target,
      podTimeoutMs: readDuration(raw.podTimeout, "--pod-timeout"),
      podIdleTimeoutMs: readPodIdleTimeout(raw.podIdleTimeout),
      maxOutputBytes: readSize(raw.maxOutputBytes, "--max-output-bytes"),
      maxLogBytes: readSize(raw.maxLogBytes, "--max-log-bytes"),
      ...readKeepWarm(raw.keepWarm, raw.maxWarm),
      ...(raw.skipWarm ? { claimWarm: false } : {}),
      ...(env.KNOTLESS_TAR === "none" ? {} : { hostTar: { binary: env.KNOTLESS_TAR || "tar", env } }),
      owner: resolveProcessIdentity(),
      ...(raw.nixery !== undefined ? { nixery: raw.nixery } : {}),
      git: { binary: raw.git ?? "git", env },
      runner,
    },
    transport: {
      setting: { target: cluster.target, kubectlPath: cluster.kubectlPath, transport: cluster.transport },
      env,
    },
    ...(env.KNOTLESS_MILL_TIMINGS ? { timings: readTimings(env.KNOTLESS_MILL_TIMINGS) } : {}),
  };
}

/** wss:// always; ws:// only when asked for by --insecure-mill. */
export function readMillUrl(text: string, insecure: boolean): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InputError(`--mill expects a URL such as wss://spindle.example/mill, got ${JSON.stringify(text)}`);
  }
  if (url.protocol === "wss:") return url.toString();
  if (url.protocol === "ws:" && insecure) return url.toString();
  if (url.protocol === "ws:")
    throw new InputError("--mill: ws:// sends the token in clear; use wss://, or --insecure-mill for a loopback test");
  throw new InputError(`--mill expects a wss:// URL, got ${url.protocol}`);
}

/** --mill-ca: a PEM file of one or more certificates, each one parsed here so a wrong file is refused before the first dial. */
export function readMillCa(path: string, millUrl: string): string {
  if (!millUrl.startsWith("wss:"))
    throw new InputError("--mill-ca is for a wss:// mill: a ws:// one has no certificate to check");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(`--mill-ca: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new InputError(`--mill-ca: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new InputError(
        `--mill-ca: certificate ${index + 1} of ${path} cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  });
  return blocks.join("\n") + "\n";
}

function readLogStore(raw: RawExecutorOptions, env: NodeJS.ProcessEnv): LogStoreSetting {
  const text = raw.logStore!;
  if (!text.startsWith("s3://")) return { kind: "dir", dir: resolve(text) };
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(text);
  if (!match)
    throw new InputError(
      `--log-store expects s3://BUCKET/PREFIX with a bucket name of 3 to 63 lowercase letters, digits, '.' or '-', got ${JSON.stringify(text)}`,
    );
  const prefix = (match[2] ?? "").replace(/^\/+/, "");
  const endpoint = raw.s3Endpoint ?? (env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined);
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  return {
    kind: "s3",
    bucket: match[1]!,
    prefix: prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`,
    region: raw.s3Region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1"),
    ...(endpoint ? { endpoint } : {}),
    ...(raw.s3PathStyle ? { forcePathStyle: true } : {}),
    // Absent from the environment: the SDK's own chain (shared files, instance roles) finds them.
    ...(accessKeyId && secretAccessKey
      ? {
          credentials: {
            accessKeyId,
            secretAccessKey,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          },
        }
      : {}),
  };
}

/** The smallest outbox cap taken: below it, one terminal would keep reservations refused until the mill acknowledges. */
const MIN_OUTBOX_BYTES = 1024;

function readOutboxMaxBytes(text: string): number {
  const bytes = readSize(text, "--outbox-max-bytes");
  if (bytes < MIN_OUTBOX_BYTES)
    throw new InputError(`--outbox-max-bytes must be at least 1Ki (${MIN_OUTBOX_BYTES} bytes), got "${text}"`);
  return bytes;
}

function readHostPort(text: string, flag: string): { host: string; port: number } {
  const match = /^(.*):(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (!match || match[1] === "" || port > 65535)
    throw new InputError(`${flag} expects HOST:PORT such as 127.0.0.1:9464, got ${JSON.stringify(text)}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port };
}

function readTimings(text: string): Partial<MillTimings> {
  try {
    return JSON.parse(text) as Partial<MillTimings>;
  } catch {
    throw new InputError(`KNOTLESS_MILL_TIMINGS is not JSON: ${JSON.stringify(text)}`);
  }
}
