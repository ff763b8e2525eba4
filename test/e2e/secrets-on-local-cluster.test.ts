// End to end: a workflow's secrets through the real CLI, either transport (the API in-process, the real kubectl) and the local cluster's podman pods never
// leak, in any form, into --out, the console, kubectl's argv, the API requests, the cluster's objects, the
// container's spec or the runner's temp files.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { buildSecretForms } from "../../src/secrets/secret-forms.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

/** Async on purpose: the cluster serves from this process, so a synchronous kubectl call would deadlock. */
const execFileAsync = promisify(execFile);
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const RUN_ID = "leak-lc-1";

const API_TOKEN = "s3cr3t-Value/with+base64_chars!";
const MULTI = "first-line-secret\nsecond-line-secret";
const ENV_TOKEN = "env-Secret-9f8e7d6c5b";

/** Prints every secret in every form the masker knows, across the relay's chunk boundaries, byte by byte with pauses. */
const PRINT_STEP = [
  'echo "plain: $API_TOKEN"',
  'echo "env: $ENV_TOKEN"',
  'for s in "$API_TOKEN" "$ENV_TOKEN" "$MULTI"; do',
  "  for b in 'base64 -w0' 'base64 -w0 | tr -d =' 'base64 -w0 | tr \"+/\" \"-_\"' 'base64 -w0 | tr \"+/\" \"-_\" | tr -d ='; do",
  // Alone, then inside longer base64 data at each of the three alignments (1000, 1001, 1002 bytes before it).
  '    printf %s "$s" | eval "$b"; echo',
  '    for n in 1000 1001 1002; do { head -c $n /dev/urandom; printf %s "$s"; head -c 77 /dev/urandom; } | eval "$b"; echo; done',
  "  done",
  "done",
  'echo "$MULTI"',
  'printf "%s\\n" "$MULTI" | while IFS= read -r line; do echo "line: $line"; done',
  // Around the relay's chunks: odd and even amounts of filler before each copy, all on one long line.
  'for n in 4095 4096 8191 16384 65535 65536 131071; do head -c $n /dev/zero | tr "\\0" x; printf %s "$API_TOKEN"; done; echo',
  // One byte at a time, with a pause longer than any poll, frame or heartbeat in the middle.
  'i=0; while [ $i -lt ${#API_TOKEN} ]; do printf %s "${API_TOKEN:$i:1}"; sleep 0.05; [ $i = 12 ] && sleep 2; i=$((i+1)); done; echo',
  'echo "$API_TOKEN" >&2',
  'printf %s "$ENV_TOKEN" | base64 >&2',
  'printf "%s\\n" "$MULTI" >&2',
  // The step's own outputs are the user's business: the files come back as they are, their listing must not leak.
  'printf %s "$API_TOKEN" > /outputs/token.txt',
  'printf %s "$MULTI" > /outputs/multi.txt',
  'printf %s "$ENV_TOKEN" > "/outputs/$ENV_TOKEN.txt"',
  'echo "CARRIED=$API_TOKEN" >> "$KNOTLESS_ENV"',
  'printf "CARRIED_MULTI<<EOF\\n%s\\nEOF\\n" "$MULTI" >> "$KNOTLESS_ENV"',
  "echo printed",
];

const CARRIED_STEP = [
  '[ "$CARRIED" = "$API_TOKEN" ] && [ "$CARRIED_MULTI" = "$MULTI" ] && echo "carried intact"',
  'echo "carried: $CARRIED"',
  'echo "$CARRIED_MULTI"',
];

function buildWorkflow(): string {
  const block = (lines: readonly string[]): string => lines.map((line) => `      ${line}`).join("\n");
  return [
    "steps:",
    "  - name: print",
    "    command: |",
    block(PRINT_STEP),
    "  - name: carried",
    "    command: |",
    block(CARRIED_STEP),
    "",
  ].join("\n");
}

/** Every regular file under `root` (paths), following no links. */
function listFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // gone while we looked (the runner removes its staging directory)
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push(path);
    }
  };
  walk(root);
  return files;
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return undefined;
  }
}

/**
 * Reads every file under `root` every 50 ms while the run goes on (the staging directory lives only that long) and
 * notes each one that holds one of `forms`, by name and content.
 */
function watchTempFiles(root: string, forms: readonly string[]): { stop(): string[]; seen(): string[] } {
  const hits = new Set<string>();
  const seen = new Set<string>();
  const look = (): void => {
    for (const file of listFiles(root)) {
      const text = readIfThere(file);
      if (text === undefined) continue;
      const name = relative(root, file);
      seen.add(name);
      for (const form of forms)
        if (name.includes(form) || text.includes(form))
          hits.add(`${name} holds the form ${JSON.stringify(form.slice(0, 4))}…`);
    }
  };
  const timer = setInterval(look, 50);
  return {
    stop: () => (clearInterval(timer), look(), [...hits]),
    seen: () => [...seen],
  };
}

/**
 * A program (kubectl, the host tar) that records its argv and environment, then is the real one: per call, a file
 * in `log` of the NUL-ended argv words, a \x01 and the environment as /proc shows it (a file each: calls run in
 * parallel).
 */
function writeRecorder(dir: string, name: string, real: string): { path: string; log: string } {
  const log = join(dir, `${name}-calls`);
  mkdirSync(log);
  const path = join(dir, name);
  const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`;
  writeFileSync(
    path,
    `#!/bin/sh\n{ printf '%s\\0' "$@"; printf '\\001'; cat /proc/$$/environ; } > "$(mktemp ${quote(log)}/call.XXXXXXXX)"\nexec ${quote(real)} "$@"\n`,
  );
  chmodSync(path, 0o755);
  return { path, log };
}

/** The recorder's calls: each one's argv and environment. */
function readRecordedCalls(log: string): Array<{ argv: string[]; environ: string[] }> {
  return readdirSync(log).map((name) => {
    const [argv = "", environ = ""] = readFileSync(join(log, name), "utf8").split("\x01");
    return { argv: argv.split("\0").slice(0, -1), environ: environ.split("\0").filter((entry) => entry !== "") };
  });
}

describe(
  "secrets on the local cluster through either transport",
  { skip: findPodmanSkipReason(), timeout: 600_000 },
  () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await startLocalCluster({ namespace: "ci", recordRequests: true });
    });
    after(async () => {
      await cluster?.stop();
    });

    for (const transport of ["api", "kubectl"] as const) {
      it(`never lets a secret, in any form, reach --out, the console, kubectl, the API, the cluster's objects, the container's spec or the runner's temp files (--transport ${transport})`, async () => {
        const ws = makeWorkspace("");
        const base = join(ws.out, "..");
        const secretsFile = join(base, "secrets.env");
        writeFileSync(
          secretsFile,
          `# the run's secrets\nAPI_TOKEN=${API_TOKEN}\nMULTI="${MULTI.replace("\n", "\\n")}"\n`,
          { mode: 0o600 },
        );
        const workflow = join(base, "leak.yml");
        writeFileSync(workflow, buildWorkflow());
        const tmp = join(base, "tmp");
        mkdirSync(tmp);
        const kubectl = writeRecorder(base, "kubectl", KUBECTL);
        const tar = writeRecorder(
          base,
          "tar",
          execFileSync("sh", ["-c", "command -v tar"], { encoding: "utf8" }).trim(),
        );
        const args = [
          "run",
          "--workflow",
          workflow,
          "--checkout",
          ws.checkout,
          "--secrets",
          secretsFile,
          "--secret-env",
          "ENV_TOKEN",
          "--run-id",
          RUN_ID,
          "--namespace",
          "ci",
        ];
        const env = { ENV_TOKEN, TMPDIR: tmp, KNOTLESS_TAR: tar.path };

        const forms = buildSecretForms([API_TOKEN, MULTI, ENV_TOKEN]);
        assert.ok(forms.length >= 12, `${forms.length} forms`);
        const watcher = watchTempFiles(tmp, forms);
        const run = await runCli(
          [
            ...args,
            "--out",
            ws.out,
            "--kubeconfig",
            cluster.kubeconfigPath,
            "--transport",
            transport,
            "--kubectl",
            kubectl.path,
            "--keep",
          ],
          { env, timeoutMs: 400_000 },
        );
        const tempHits = watcher.stop();
        const dry = await runCli([...args, "--out", `${ws.out}-dry`, "--dry-run"], { env });

        // What a kept pod's podman containers and pod say of themselves (env, args, labels, annotations, mounts).
        const containers = (await cluster.podmanContainers()).filter((name) => name.includes(RUN_ID));
        const inspected =
          containers.length > 0
            ? (await execFileAsync("podman", ["inspect", ...containers], { encoding: "utf8", maxBuffer: 64 << 20 }))
                .stdout
            : "";
        const pods = (await cluster.podmanPods()).filter((name) => name.includes(RUN_ID));
        const podInspected =
          pods.length > 0
            ? (await execFileAsync("podman", ["pod", "inspect", ...pods], { encoding: "utf8", maxBuffer: 64 << 20 }))
                .stdout
            : "";
        const result = existsSync(join(ws.out, "result.json")) ? readResult(ws.out) : undefined;
        const podName = result?.job.pod;
        const leftInPod = podName
          ? await cluster.podExec("ci", podName, ["sh", "-c", "ls -A /knotless-secrets"])
          : undefined;
        if (result)
          await execFileAsync(KUBECTL, [
            "--kubeconfig",
            cluster.kubeconfigPath,
            "delete",
            "job",
            "-n",
            "ci",
            result.job.name,
            "--cascade=background",
          ]);

        assert.equal(run.code, 0, run.stderr);
        assert.equal(dry.code, 0, dry.stderr);
        assert.deepEqual(
          result?.steps.map((step) => [step.name, step.status]),
          [
            ["print", "success"],
            ["carried", "success"],
          ],
        );
        // The steps had every secret (and their output was masked).
        assert.match(run.stdout, /^plain: \*\*\*$/m);
        assert.match(run.stdout, /^env: \*\*\*$/m);
        assert.match(run.stdout, /^carried intact$/m);
        assert.match(run.stdout, /^printed$/m);
        assert.equal(leftInPod?.stdout, "", "the kept pod still holds the secrets file");
        // The step's own outputs came back as it wrote them: that is the user's business, not a leak.
        const outputs = join(ws.out, "outputs");
        assert.equal(readFileSync(join(outputs, "token.txt"), "utf8"), API_TOKEN);
        assert.equal(readFileSync(join(outputs, "multi.txt"), "utf8"), MULTI);
        assert.equal(readFileSync(join(outputs, `${ENV_TOKEN}.txt`), "utf8"), ENV_TOKEN);

        // Not vacuous: each haystack holds what it should.
        const files = listFiles(ws.out).filter((file) => !file.startsWith(`${outputs}/`));
        assert.deepEqual(files.map((file) => relative(ws.out, file)).sort(), ["log.ndjson", "result.json", "run.log"]);
        const calls = readRecordedCalls(kubectl.log);
        if (transport === "kubectl")
          assert.ok(
            calls.some((call) => call.argv.includes("exec")),
            "kubectl was called through the recorder",
          );
        else assert.deepEqual(calls, [], "the API transport runs no kubectl");
        if (transport === "api")
          assert.match(
            readFileSync(join(ws.out, "run.log"), "utf8"),
            / api GET \/api\/v1\/namespaces\/ci\/pods\/[^ ]+\/exec\?command=/,
            "run.log records the API requests",
          );
        const tarCalls = readRecordedCalls(tar.log);
        assert.ok(
          tarCalls.some((call) => call.argv.includes("--version")),
          "the host tar was probed through the recorder",
        );
        const requests = cluster.requests();
        assert.ok(
          requests.some((request) => request.upgrade && request.url.includes("helper.sh")),
          "the cluster recorded the exec requests",
        );
        const history = cluster.objectHistory();
        assert.equal(history.complete, true, "the store's history reaches back to its first change");
        assert.ok(
          history.changes.some((change) => change.resource === "jobs.batch") &&
            history.changes.some((change) => change.resource === "pods"),
          "the history holds the run's Job and pod",
        );
        assert.ok(
          containers.length >= 1 && inspected.includes('"Env"'),
          `the kept pod's containers: ${containers.join(", ")}`,
        );
        assert.ok(
          watcher.seen().some((name) => name.endsWith("helper.sh")),
          `the watcher saw the staging directory: ${watcher.seen().join(", ")}`,
        );

        const haystacks: Array<[string, string]> = [
          ["stdout", run.stdout],
          ["stderr", run.stderr],
          ["the dry run", dry.stdout + dry.stderr],
          ...files.map((file): [string, string] => [file, readFileSync(file, "latin1")]),
          [
            "the names of the files under --out",
            listFiles(ws.out)
              .map((file) => relative(ws.out, file))
              .filter((name) => !name.startsWith("outputs/"))
              .join("\n"),
          ],
          ["kubectl's argv", JSON.stringify(calls.map((call) => call.argv))],
          ["kubectl's environment", JSON.stringify(calls.map((call) => call.environ))],
          ["the host tar's argv and environment", JSON.stringify(tarCalls)],
          [
            "the API requests",
            requests.map((request) => `${request.method} ${request.url} ${decodeURIComponent(request.url)}`).join("\n"),
          ],
          ["the cluster's objects now", JSON.stringify(cluster.allObjects())],
          ["every version of every object", JSON.stringify(history.changes)],
          ["podman inspect of the containers", inspected],
          ["podman pod inspect", podInspected],
        ];
        assert.deepEqual(tempHits, [], "the runner's temp files");
        // Every place that holds a form, not just the first: a failure says how far a leak got.
        const leaks = haystacks.flatMap(([where, text]) =>
          forms
            .filter((form) => text.includes(form))
            .map(
              (form) =>
                `${where} holds the secret form ${JSON.stringify(form.slice(0, 4))}… (${form.length} characters)`,
            ),
        );
        assert.deepEqual(leaks, []);
        await assertNothingLeft(cluster);
      });
    }
  },
);
