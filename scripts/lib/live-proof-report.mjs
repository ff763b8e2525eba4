// scripts/live-proof.sh's node half: turns the facts the script gathered, result.json and log.ndjson into the report.
//   report --facts FILE --report DIR [--kubeconfig FILE]...   writes DIR/live-proof.json and DIR/live-proof.md, exit 0 pass / 1 fail
//   mask [--kubeconfig FILE]... < text > masked              every token, key and password of those kubeconfigs as ***
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { collectKubeconfigSecrets, containsSecret, maskText } from "./mask-secrets.mjs";

/** The runner phases log.ndjson reports as system control lines, in the order a run goes through them. */
const PHASES = ["scan", "create", "pod", "upload", "download", "teardown"];
/** What the example's last step writes into /outputs. */
const EXPECTED_OUTPUTS = ["ran.txt"];
/** The most of a command's output kept in the report. */
const MAX_OUTPUT_CHARS = 16_000;

/** The facts file: one `key<TAB>value` line each; a key given more than once is a list (node samples). */
export function readFacts(path) {
  const facts = new Map();
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  for (const line of text.split("\n")) {
    if (!line) continue;
    const tab = line.indexOf("\t");
    const key = tab < 0 ? line : line.slice(0, tab);
    const value = tab < 0 ? "" : line.slice(tab + 1);
    facts.set(key, [...(facts.get(key) ?? []), value]);
  }
  return {
    get: (key) => facts.get(key)?.at(-1),
    all: (key) => facts.get(key) ?? [],
    has: (key) => facts.has(key),
  };
}

/** The runner's phase durations from its log.ndjson control lines (docs/how-a-run-works.md, "Results and logs"), by phase name. */
export function readPhaseDurations(logPath) {
  const phases = {};
  if (!existsSync(logPath)) return phases;
  for (const line of readFileSync(logPath, "utf8").split("\n")) {
    if (!line.includes('"control"')) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (
      entry.kind === "control" &&
      entry.stepKind === "system" &&
      entry.status === "end" &&
      PHASES.includes(entry.name)
    ) {
      phases[entry.name] = { durationMs: entry.durationMs ?? null, ok: entry.ok ?? null, detail: entry.detail ?? null };
    }
  }
  return phases;
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

function readText(path, mask) {
  if (!path || !existsSync(path)) return null;
  const text = mask(readFileSync(path, "utf8"));
  return text.length > MAX_OUTPUT_CHARS
    ? `${text.slice(0, MAX_OUTPUT_CHARS)}\n… (${text.length - MAX_OUTPUT_CHARS} more characters)`
    : text;
}

function toNumber(value) {
  return value === undefined || value === "" || value === "?" ? null : Number(value);
}

function readSamples(values) {
  return values.map((value) => {
    const [at, count] = value.split(" ");
    return { at, count: toNumber(count) };
  });
}

function sha256File(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Every output the example must bring back, as the result lists it and as it is on disk. */
function checkOutputs(result, runDir) {
  const listed = Array.isArray(result?.outputs) ? result.outputs : [];
  const received = listed.map((entry) => {
    const path = join(runDir, "outputs", entry.path);
    const onDisk = existsSync(path);
    return {
      path: entry.path,
      size: entry.size,
      sha256: entry.sha256,
      onDisk,
      sha256Matches: onDisk ? sha256File(path) === entry.sha256 : false,
    };
  });
  const missing = EXPECTED_OUTPUTS.filter(
    (name) => !received.some((entry) => entry.path === name && entry.onDisk && entry.sha256Matches),
  );
  return { expected: EXPECTED_OUTPUTS, received, missing };
}

/** The report files (the run's own included) that hold a secret: names only. */
function findSecretsInReport(reportDir, files, secrets) {
  return files
    .filter((file) => existsSync(file) && containsSecret(readFileSync(file, "utf8"), secrets))
    .map((file) => relative(reportDir, file));
}

/** Every regular file under `dir` (links not followed). */
function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listFiles(path);
    return entry.isFile() ? [path] : [];
  });
}

/** The check list: each "pass", "fail" or "not-run" (an earlier stage failed), with one line of detail. */
function buildChecks(facts, result, outputs) {
  const reached = (key) => facts.has(key);
  const check = (name, ran, ok, detail) => ({ name, status: ran ? (ok ? "pass" : "fail") : "not-run", detail });
  const doctorExit = facts.get("doctor_exit");
  const credentialExit = facts.get("credential_exit");
  const runExit = facts.get("run_exit");
  const revokeExit = facts.get("revoke_exit");
  return [
    check(
      "doctor passes with the admin kubeconfig",
      reached("doctor_exit"),
      doctorExit === "0",
      `doctor exited ${doctorExit ?? "-"} (expected 0)`,
    ),
    check(
      "the scoped credential is minted, mode 0600",
      reached("credential_exit"),
      credentialExit === "0" && facts.get("credential_mode") === "0600",
      `credentials exited ${credentialExit ?? "-"}; kubeconfig mode ${facts.get("credential_mode") ?? "none"}`,
    ),
    check(
      "the example run succeeds with the scoped identity",
      reached("run_exit"),
      runExit === "0" && result?.status === "success",
      `run exited ${runExit ?? "-"}; result ${result ? `${result.status}${result.error ? `: ${result.error}` : ""}` : "missing"}`,
    ),
    check(
      "the outputs came back",
      reached("run_exit"),
      outputs.missing.length === 0,
      outputs.missing.length === 0
        ? `${outputs.received.map((entry) => entry.path).join(", ")} on disk, sha256 as the result records`
        : `missing or different: ${outputs.missing.join(", ")}`,
    ),
    check(
      "the Job is gone after the run",
      reached("job_gone"),
      facts.get("job_gone") === "yes",
      facts.get("job_gone") === "yes"
        ? `no Job labelled ${facts.get("run_selector")}`
        : (facts.get("job_detail") ?? "could not be checked"),
    ),
    check(
      "the run's pods are gone",
      reached("pods_gone"),
      facts.get("pods_gone") === "yes",
      facts.get("pods_gone") === "yes"
        ? `gone ${facts.get("pods_gone_after_s")}s after the run ended`
        : (facts.get("pods_detail") ?? "could not be checked"),
    ),
    check(
      "the scoped credential is revoked",
      reached("revoke_exit"),
      revokeExit === "0",
      `credentials --revoke exited ${revokeExit ?? "-"}`,
    ),
  ];
}

/** The report object (live-proof.json). */
export function buildReport(facts, reportDir, mask) {
  const runDir = join(reportDir, "run");
  const resultPath = join(runDir, "result.json");
  const result = readJson(resultPath);
  const phases = readPhaseDurations(join(runDir, "log.ndjson"));
  const outputs = checkOutputs(result, runDir);
  const checks = buildChecks(facts, result, outputs);
  const during = readSamples(facts.all("nodes_during"));
  const after = readSamples(facts.all("nodes_after"));
  const counts = during.map((sample) => sample.count).filter((count) => count !== null);
  const doctorText = readText(facts.get("doctor_stdout"), mask);
  let doctorJson;
  try {
    doctorJson = doctorText === null ? null : JSON.parse(doctorText);
  } catch {
    doctorJson = null;
  }
  const failed = facts.get("failure_stage");
  return {
    kind: "knotless-runner-k8s.live-proof",
    version: 1,
    verdict: checks.every((c) => c.status === "pass") ? "pass" : "fail",
    failure: failed ? { stage: failed, message: mask(facts.get("failure_message") ?? "") } : null,
    interruptedBy: facts.get("interrupted") ?? null,
    startedAt: facts.get("started_at") ?? null,
    finishedAt: facts.get("finished_at") ?? null,
    target: {
      cluster: facts.get("local") === "1" ? "local" : "kubeconfig",
      kubeconfig: facts.get("local") === "1" ? null : (facts.get("kubeconfig") ?? null),
      context: facts.get("context") || null,
      namespace: facts.get("namespace") ?? null,
      image: facts.get("image") || null,
      kubectl: facts.get("kubectl") ?? null,
    },
    checks,
    run: {
      runId: facts.get("run_id") ?? null,
      exitCode: toNumber(facts.get("run_exit")),
      resultPath: existsSync(resultPath) ? resultPath : null,
      status: result?.status ?? null,
      error: result?.error ?? null,
      errorReason: result?.errorReason ?? null,
      durationMs: result?.durationMs ?? null,
      job: result?.job ?? null,
      runLog: existsSync(join(runDir, "run.log")) ? join(runDir, "run.log") : null,
    },
    durations: {
      podWaitMs: phases.pod?.durationMs ?? null,
      uploadMs: phases.upload?.durationMs ?? null,
      steps: (Array.isArray(result?.steps) ? result.steps : []).map((step) => ({
        name: step.name,
        status: step.status,
        exitCode: step.exitCode,
        durationMs: step.durationMs,
      })),
      downloadMs: phases.download?.durationMs ?? null,
      teardownMs: phases.teardown?.durationMs ?? null,
      scanMs: phases.scan?.durationMs ?? null,
      createMs: phases.create?.durationMs ?? null,
      phases,
    },
    outputs,
    nodes: {
      source: "kubectl get nodes with the admin kubeconfig (null: kubectl failed)",
      before: toNumber(facts.get("nodes_before")),
      during: { max: counts.length ? Math.max(...counts) : null, samples: during },
      after: {
        count: after.length ? after.at(-1).count : null,
        sinceRunEndS: toNumber(facts.get("after_since_run_end_s")),
        samples: after,
      },
    },
    doctor: {
      exitCode: toNumber(facts.get("doctor_exit")),
      report: doctorJson,
      output: doctorJson === null ? doctorText : null,
      stderr: readText(facts.get("doctor_stderr"), mask),
    },
    credential: {
      name: facts.get("credential_name") ?? null,
      duration: facts.get("credential_duration") || null,
      exitCode: toNumber(facts.get("credential_exit")),
      mode: facts.get("credential_mode") ?? null,
      output: readText(facts.get("credential_output"), mask),
      revokeExitCode: toNumber(facts.get("revoke_exit")),
      revokeOutput: readText(facts.get("revoke_output"), mask),
    },
    console: readText(facts.get("run_console"), mask),
  };
}

function formatMs(ms) {
  return ms === null || ms === undefined ? "–" : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}

function formatCount(count) {
  return count === null || count === undefined ? "? (kubectl failed)" : String(count);
}

function cell(text) {
  return String(text ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ");
}

/** The report for people (live-proof.md): verdict, checks, durations, nodes, paths, doctor's answer. */
export function formatMarkdown(report) {
  const lines = [`# Live proof: ${report.verdict.toUpperCase()}`, ""];
  if (report.failure) lines.push(`Stopped at **${report.failure.stage}**: ${report.failure.message}`, "");
  if (report.interruptedBy) lines.push(`Interrupted by ${report.interruptedBy}.`, "");
  lines.push(
    `- started ${report.startedAt ?? "–"}, finished ${report.finishedAt ?? "–"}`,
    `- cluster: ${report.target.cluster === "local" ? "the local cluster (local-cluster/, --local)" : `\`${report.target.kubeconfig}\``}${report.target.context ? `, context \`${report.target.context}\`` : ""}; namespace \`${report.target.namespace}\`; image ${report.target.image ? `\`${report.target.image}\`` : "the runner's default"}`,
    `- result: ${report.run.resultPath ? `\`${report.run.resultPath}\` (${report.run.status}, exit ${report.run.exitCode})` : "none"}`,
    `- run log: ${report.run.runLog ? `\`${report.run.runLog}\`` : "none"}; this report's data: \`live-proof.json\``,
    "",
    "## Checks",
    "",
    "| check | result | detail |",
    "| --- | --- | --- |",
    ...report.checks.map((c) => `| ${cell(c.name)} | ${c.status} | ${cell(c.detail)} |`),
    "",
    "## Durations (from the run's log.ndjson and result.json)",
    "",
    "| phase | duration |",
    "| --- | --- |",
    `| pod wait (Job created to pod running) | ${formatMs(report.durations.podWaitMs)} |`,
    `| upload | ${formatMs(report.durations.uploadMs)} |`,
    ...report.durations.steps.map(
      (s, i) =>
        `| step ${i + 1}: ${cell(s.name)} (${s.status}${s.exitCode === null ? "" : `, exit ${s.exitCode}`}) | ${formatMs(s.durationMs)} |`,
    ),
    `| download | ${formatMs(report.durations.downloadMs)} |`,
    `| teardown | ${formatMs(report.durations.teardownMs)} |`,
    `| whole run | ${formatMs(report.run.durationMs)} |`,
    "",
    "## Nodes (`kubectl get nodes`, admin kubeconfig)",
    "",
    "| when | nodes |",
    "| --- | --- |",
    `| before the run | ${formatCount(report.nodes.before)} |`,
    `| during the run (most seen, ${report.nodes.during.samples.length} samples) | ${formatCount(report.nodes.during.max)} |`,
    `| after the run${report.nodes.after.sinceRunEndS === null ? "" : ` (last sample, ${report.nodes.after.sinceRunEndS} s after it ended)`} | ${formatCount(report.nodes.after.count)} |`,
    "",
  );
  if (report.outputs.received.length) {
    lines.push("## Outputs", "", "| path | size | sha256 | on disk, same sha256 |", "| --- | --- | --- | --- |");
    for (const o of report.outputs.received)
      lines.push(`| ${cell(o.path)} | ${o.size} | \`${o.sha256}\` | ${o.onDisk && o.sha256Matches ? "yes" : "no"} |`);
    lines.push("");
  }
  lines.push("## Doctor", "", `Exit code ${report.doctor.exitCode ?? "–"}.`, "");
  const doctor = report.doctor.report !== null ? JSON.stringify(report.doctor.report, null, 2) : report.doctor.output;
  if (doctor) lines.push("```", doctor.trimEnd(), "```", "");
  return `${lines.join("\n")}\n`;
}

function parseKubeconfigs(argv, extra = {}) {
  const { values } = parseArgs({
    args: argv,
    options: { kubeconfig: { type: "string", multiple: true, default: [] }, ...extra },
  });
  const secrets = values.kubeconfig.flatMap((path) => collectKubeconfigSecrets(path));
  return { values, mask: (text) => maskText(text, secrets), secrets };
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === "mask") {
    const { mask } = parseKubeconfigs(rest);
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    process.stdout.write(mask(Buffer.concat(chunks).toString("utf8")));
    return 0;
  }
  if (command === "report") {
    const { values, mask, secrets } = parseKubeconfigs(rest, { facts: { type: "string" }, report: { type: "string" } });
    if (!values.facts || !values.report) throw new Error("report: --facts and --report are required");
    const report = buildReport(readFacts(values.facts), values.report, mask);
    // The report itself is masked; the run's own files are the runner's: say if any holds a secret, never which value.
    const leaks = findSecretsInReport(values.report, listFiles(join(values.report, "run")), secrets);
    report.checks.push(
      leaks.length
        ? {
            name: "no secret in the report directory",
            status: "fail",
            detail: `a credential value is in ${leaks.join(", ")}`,
          }
        : {
            name: "no secret in the report directory",
            status: "pass",
            detail: "no token, key or password of either kubeconfig in any file",
          },
    );
    if (leaks.length) report.verdict = "fail";
    writeFileSync(join(values.report, "live-proof.json"), `${JSON.stringify(report, null, 2)}\n`, { mode: 0o600 });
    writeFileSync(join(values.report, "live-proof.md"), formatMarkdown(report), { mode: 0o600 });
    for (const c of report.checks) process.stderr.write(`live-proof: ${c.status.padEnd(7)} ${c.name}: ${c.detail}\n`);
    process.stderr.write(
      `live-proof: ${report.verdict.toUpperCase()}; report: ${join(values.report, "live-proof.md")} and live-proof.json\n`,
    );
    return report.verdict === "pass" ? 0 : 1;
  }
  throw new Error(`unknown command "${command ?? ""}" (report or mask)`);
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`live-proof: report: ${error?.message ?? error}\n`);
      process.exit(2);
    },
  );
}
