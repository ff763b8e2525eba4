// A machine for scripts/live-proof.sh tests: a home, a temp dir, an unreachable admin kubeconfig, the stand-in runner, and its report.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./run-cli.js";
import { findSecretLeaks, modeOf, runScript, type ScriptRun } from "./run-script.js";
import { makeTestTempDir } from "./temp-dir.js";

export const STANDIN_RUNNER = join(REPO_ROOT, "test", "fixtures", "live-proof", "runner");
export const SCOPED_TOKEN = "FAKE-SCOPED-TOKEN-0b7e5f3a";
export const ADMIN_TOKEN = "FAKE-ADMIN-TOKEN-64c1d9e2";
export const SECRETS = { "scoped token": SCOPED_TOKEN, "admin token": ADMIN_TOKEN };

/**
 * Why the commands live-proof.sh needs are not there yet (credentials and doctor land on other branches), or false.
 * `<command> --help` must exit 0 with that command's own usage: today an unknown command with --help prints the
 * program's help and exits 0, so the exit code alone does not tell.
 */
export function missingCommands(): string | false {
  const missing = ["credentials", "doctor"].filter((command) => {
    const help = spawnSync(process.execPath, [join(REPO_ROOT, "bin", "knotless-runner-k8s.js"), command, "--help"], {
      encoding: "utf8",
    });
    return help.status !== 0 || !help.stdout.includes(`Usage: knotless-runner-k8s ${command}`);
  });
  if (missing.length === 0) return false;
  return `\`node bin/knotless-runner-k8s.js ${missing[0]} --help\` shows no ${missing.join(" or ")} command: ${missing.join(" and ")} not landed yet (other branches); this test runs once they are on main`;
}

export function containersMissing(): string | false {
  return spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0
    ? false
    : "podman with the local busybox image is not available (run scripts/setup-containers.sh)";
}

export interface Machine {
  readonly root: string;
  readonly home: string;
  readonly tmp: string;
  readonly report: string;
  readonly calls: string;
  /** An admin kubeconfig whose server nothing listens on, with a token that must never be printed. */
  readonly adminKubeconfig: string;
  readonly env: Record<string, string>;
}

export function makeMachine(): Machine {
  const root = makeTestTempDir("live-proof-");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  for (const dir of [home, tmp]) mkdirSync(dir, { recursive: true });
  const adminKubeconfig = join(root, "admin.kubeconfig");
  writeFileSync(
    adminKubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n  - name: c\n    cluster:\n      server: http://127.0.0.1:1\nusers:\n  - name: admin\n    user:\n      token: ${ADMIN_TOKEN}\ncontexts:\n  - name: c\n    context: { cluster: c, user: admin }\ncurrent-context: c\n`,
    { mode: 0o600 },
  );
  const calls = join(root, "runner-calls.log");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    TMPDIR: tmp,
    LANG: "C",
    STANDIN_SCOPED_TOKEN: SCOPED_TOKEN,
    STANDIN_RUNNER_LOG: calls,
  };
  return { root, home, tmp, report: join(root, "report"), calls, adminKubeconfig, env };
}

export function run(
  machine: Machine,
  args: readonly string[],
  env: Record<string, string> = {},
  options: { signalWhen?: { when: RegExp; signal: NodeJS.Signals }; timeoutMs?: number } = {},
): Promise<ScriptRun> {
  return runScript("live-proof.sh", args, {
    env: { ...machine.env, ...env },
    cwd: machine.root,
    timeoutMs: options.timeoutMs ?? 120_000,
    ...(options.signalWhen ? { signalWhen: options.signalWhen } : {}),
  });
}

/** live-proof.sh against the unreachable admin kubeconfig, with the stand-in runner. */
export function runStandIn(
  machine: Machine,
  env: Record<string, string>,
  options?: Parameters<typeof run>[3],
): Promise<ScriptRun> {
  return run(
    machine,
    [
      "--kubeconfig",
      machine.adminKubeconfig,
      "--report",
      machine.report,
      "--runner",
      STANDIN_RUNNER,
      "--after-wait",
      "0",
      "--sample-every",
      "1",
    ],
    env,
    options,
  );
}

export function calls(machine: Machine): string[] {
  return existsSync(machine.calls)
    ? readFileSync(machine.calls, "utf8")
        .trim()
        .split("\n")
        .map((line) => line.split(" ")[0] + (line.includes("--revoke") ? " --revoke" : ""))
    : [];
}

export interface Report {
  verdict: string;
  failure: { stage: string; message: string } | null;
  interruptedBy: string | null;
  checks: Array<{ name: string; status: string; detail: string }>;
  run: { resultPath: string | null; status: string | null; exitCode: number | null; job: { name: string } | null };
  durations: {
    podWaitMs: number | null;
    uploadMs: number | null;
    downloadMs: number | null;
    teardownMs: number | null;
    steps: Array<{ name: string; status: string; durationMs: number }>;
  };
  nodes: { before: number | null; during: { max: number | null; samples: unknown[] }; after: { count: number | null } };
  outputs: { missing: string[]; received: Array<{ path: string }> };
  doctor: { exitCode: number | null; report: unknown };
  credential: { exitCode: number | null; revokeExitCode: number | null; output: string | null };
}

export function readReport(machine: Machine): Report {
  assert.equal(modeOf(join(machine.report, "live-proof.json")), "0600");
  assert.equal(modeOf(join(machine.report, "live-proof.md")), "0600");
  return JSON.parse(readFileSync(join(machine.report, "live-proof.json"), "utf8")) as Report;
}

export function statusOf(report: Report, prefix: string): string | undefined {
  return report.checks.find((c) => c.name.startsWith(prefix))?.status;
}

/** No token in any output or file (the admin kubeconfig excepted), and no temp file left. */
export function assertNoLeaks(machine: Machine, result: ScriptRun): void {
  assert.deepEqual(findSecretLeaks(result, [machine.root], SECRETS, { "admin token": [machine.adminKubeconfig] }), []);
  assert.deepEqual(readdirSync(machine.tmp), [], "the script's temp files are removed");
}
