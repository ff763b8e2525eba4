// Tests of the fake kubectl's exec: it really runs commands inside the pod sandbox, with kubectl's exit codes and lifetimes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createFakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { buildGlobalArgs, createJob, waitUntil } from "./job-fixture.js";

describe("exec", { concurrency: true }, () => {
  test("exec runs in the pod: hostname is the pod name, /work is the pod's volume, env comes from the manifest, stdin is piped with -i", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-x");
    const volumeDirs = (await cluster.pods())[0]?.volumeDirs ?? {};
    await writeFile(join(volumeDirs.work ?? "", "from-host"), "seeded\n");

    const script =
      'hostname; pwd; cat /work/from-host; echo "$CI $TANGLED_REPO $PATH $HOSTNAME"; cat > /outputs/in; echo $$';
    const run = await cluster.kubectl(
      [...buildGlobalArgs(cluster), "exec", "-i", pod, "-c", "run", "--", "sh", "-c", script],
      { stdin: "piped bytes" },
    );
    assert.equal(run.stderr, "");
    assert.equal(run.exitCode, 0);
    const [hostname, cwd, seeded, env, pid] = run.stdout.trimEnd().split("\n");
    assert.equal(hostname, pod);
    assert.equal(cwd, "/");
    assert.equal(seeded, "seeded");
    assert.equal(env, `true did:plc:abc/repo /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${pod}`);
    assert.ok(Number(pid) < 100, "the command runs in the pod's pid namespace");
    assert.equal(await readFile(join(volumeDirs.outputs ?? "", "in"), "utf8"), "piped bytes");

    const noStdin = await cluster.kubectl(
      [...buildGlobalArgs(cluster), "exec", pod, "-c", "run", "--", "sh", "-c", "wc -c"],
      { stdin: "ignored" },
    );
    assert.equal(noStdin.stdout.trim(), "0", "without -i the command reads /dev/null");
  });

  test("exec exits with the command's code and prints kubectl's message, and an unknown pod is NotFound", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-y");
    const failed = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "exec",
      pod,
      "-c",
      "run",
      "--",
      "sh",
      "-c",
      "echo out; echo err >&2; exit 3",
    ]);
    assert.equal(failed.exitCode, 3);
    assert.equal(failed.stdout, "out\n");
    assert.equal(failed.stderr, "err\ncommand terminated with exit code 3\n");
    const missing = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "exec",
      "nope-12345",
      "-c",
      "run",
      "--",
      "true",
    ]);
    assert.equal(missing.exitCode, 1);
    assert.equal(missing.stderr, 'Error from server (NotFound): pods "nope-12345" not found\n');
    const execs = await cluster.execs();
    assert.deepEqual(
      execs.map((e) => [e.pod, e.exitCode]),
      [[pod, 3]],
    );
  });

  test("a background process started by one exec is visible to the next and killed by delete", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-z");
    const started = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "exec",
      pod,
      "-c",
      "run",
      "--",
      "sh",
      "-c",
      "nohup sleep 30 >/dev/null 2>&1 &",
    ]);
    assert.equal(started.exitCode, 0);
    const seen = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "exec",
      pod,
      "-c",
      "run",
      "--",
      "ps",
      "-eo",
      "args",
    ]);
    assert.match(seen.stdout, /^sleep 30$/m);
    assert.ok((await cluster.processesInPod(pod)).includes("sleep 30"));

    await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "delete",
      "job",
      "run-z",
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
    ]);
    assert.deepEqual(await cluster.processesInPod(pod), []);
    const gone = await cluster.kubectl([...buildGlobalArgs(cluster), "exec", pod, "-c", "run", "--", "true"]);
    assert.equal(gone.exitCode, 1);
  });

  test("killing the fake kubectl mid-exec leaves the process in the pod running until it exits", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-k");
    // Long enough that a loaded machine cannot finish it between the kill and the look into the pod.
    const script = "i=0; while [ $i -lt 50 ]; do echo tick $i; sleep 0.1; i=$((i+1)); done; echo finished > /work/done";
    const child = spawn(
      cluster.kubectlPath,
      [...buildGlobalArgs(cluster), "exec", pod, "-c", "run", "--", "sh", "-c", script],
      { env: cluster.env, stdio: ["ignore", "pipe", "ignore"] },
    );
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("close", resolve));
    assert.ok(
      (await cluster.processesInPod(pod)).some((p) => p.includes("tick")),
      "the command still runs",
    );

    const workDir = (await cluster.pods())[0]?.volumeDirs.work ?? "";
    await waitUntil(
      async () => (await readFile(join(workDir, "done"), "utf8").catch(() => "")) === "finished\n",
      30_000,
    );
    await waitUntil(async () => (await cluster.execs())[0]?.exitCode !== undefined, 30_000);
    assert.equal((await cluster.execs())[0]?.exitCode, 0, "the command ended normally in the pod");
    const execCall = (await cluster.calls()).find((c) => c.argv.includes("exec"));
    assert.equal(execCall?.complete, false, "a SIGKILLed call stays recorded as incomplete");
  });

  test("exec streams 16 MiB in through -i and back out, counting the stdin bytes", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-big");
    // 256 times a pipe's 64 KiB: every hop (fake kubectl, sandbox, cat) has to wait for the next to drain.
    const size = 16 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const child = spawn(
      cluster.kubectlPath,
      [...buildGlobalArgs(cluster), "exec", "-i", pod, "-c", "run", "--", "cat"],
      { env: cluster.env, stdio: ["pipe", "pipe", "inherit"] },
    );
    Readable.from(
      (function* () {
        for (let sent = 0; sent < size; sent += chunk.length) yield chunk;
      })(),
    ).pipe(child.stdin);
    let received = 0;
    child.stdout.on("data", (c: Buffer) => {
      received += c.length;
    });
    const exitCode = await new Promise((resolve) => child.once("close", resolve));
    assert.equal(exitCode, 0);
    assert.equal(received, size);
    const execCall = (await cluster.calls()).find((c) => c.argv.includes("exec"));
    assert.equal(execCall?.stdinBytes, size);
  });
});
