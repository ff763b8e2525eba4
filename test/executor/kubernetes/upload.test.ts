// Tests uploadFiles through the scripted kubectl: both packers, the pod's receipt and count, and who is to blame when tar fails.
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { InputError } from "../../../src/core/errors.js";
import { chooseHostTar, stageRunnerFiles, uploadFiles } from "../../../src/executor/kubernetes/upload.js";
import type { HostTar } from "../../../src/transfer/host-tar.js";
import { scanUploadTrees } from "../../../src/transfer/scan-tree.js";
import { UPLOAD_RECEIPT_ARCHIVE_PATH } from "../../../src/transfer/transfer-receipt.js";
import { isInfraError } from "../../support/infra-error.js";
import { makeTempDir } from "../../transfer/tree-helpers.js";
import { NODE_NAME, POD_NAME, podList, runningPod } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { honestPod, readArchive } from "./upload-pod.js";
import { HOST_TAR } from "../../support/run-library.js";

const POD = { name: POD_NAME, node: NODE_NAME };

/** Every regular file under `dir`. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

describe("uploadFiles", () => {
  let workspace = "";
  let checkout = "";
  let shared = "";
  let gnuTar: HostTar;
  const staged: string[] = [];

  before(async () => {
    workspace = await makeTempDir("upload");
    checkout = join(workspace, "checkout");
    shared = join(workspace, "shared");
    await mkdir(join(checkout, "src"), { recursive: true });
    await mkdir(shared);
    await writeFile(join(checkout, "README"), "readme\n");
    await writeFile(join(checkout, "src", "main.c"), "int main;\n");
    await writeFile(join(shared, "lint.sh"), "true\n");
    const found = await chooseHostTar(HOST_TAR);
    assert.ok(found, "these tests need GNU tar on the host");
    gnuTar = found;
  });

  after(async () => {
    for (const dir of staged) await rm(dir, { recursive: true, force: true });
    await rm(workspace, { recursive: true, force: true });
  });

  async function setUp(): Promise<ReturnType<typeof buildTestContext> & { staging: string }> {
    const test = buildTestContext({ settings: { checkoutDir: checkout, sharedStepsDir: shared } });
    const staging = await stageRunnerFiles(test.ctx.settings);
    staged.push(staging);
    test.kubectl.on("get pods", podList(runningPod())); // a failed exec first checks that the pod still runs
    return { ...test, staging };
  }

  for (const packer of ["GNU tar", "the runner's packer"] as const) {
    it(`sends every tree in one exec with ${packer}, and succeeds when the pod has the receipt and the count`, async () => {
      const { ctx, kubectl, staging } = await setUp();
      const seen: { names?: string[] } = {};
      kubectl.on("exec", honestPod(seen));
      const summary = await uploadFiles(
        ctx,
        POD,
        staging,
        scanUploadTrees(checkout, shared),
        packer === "GNU tar" ? gnuTar : undefined,
      );
      assert.equal(kubectl.calls.length, 1);
      assert.deepEqual(kubectl.calls[0]!.command.slice(0, 5), ["exec", "-i", POD.name, "-c", "run"]);
      assert.deepEqual(
        seen.names?.map((name) => name.replace(/\/$/, "")),
        [
          "knotless/env",
          "knotless/env/0.env",
          "knotless/env/1.env",
          "knotless/env/carried.env",
          "knotless/env/run.env",
          "knotless/helper.sh",
          "knotless/steps",
          "knotless/steps/0.sh",
          "knotless/steps/1.sh",
          "work/README",
          "work/src",
          "work/src/main.c",
          "steps/lint.sh",
          UPLOAD_RECEIPT_ARCHIVE_PATH,
        ],
      );
      assert.equal(summary.files, 10);
      assert.equal(summary.entries, 13);
      assert.equal(summary.archiveBytes, kubectl.calls[0]!.stdinBytes?.length);
    });
  }

  it("fails with integrity-mismatch when the pod's find sees fewer entries than were sent", async () => {
    const { ctx, kubectl, staging } = await setUp();
    kubectl.on("exec", async (call) => {
      const { receipt } = await readArchive(call.stdinBytes ?? Buffer.alloc(0));
      return { stdout: `${receipt}3\n` };
    });
    await assert.rejects(
      uploadFiles(ctx, POD, staging, scanUploadTrees(checkout, shared), gnuTar),
      isInfraError("integrity-mismatch", /lines from find under \/work and \/steps, expected 6/),
    );
  });

  it("reports a file that vanished after the scan as bad input naming it, not as a failed exec", async () => {
    const dir = join(workspace, "vanishing");
    await mkdir(dir);
    await writeFile(join(dir, "stays.txt"), "x");
    await writeFile(join(dir, "goes.txt"), "y");
    const { ctx, kubectl, staging } = await setUp();
    const trees = scanUploadTrees(dir, undefined);
    await unlink(join(dir, "goes.txt"));
    kubectl.on("exec", { exitCode: 2, stderr: "tar: Unexpected EOF in archive\n" });
    await assert.rejects(
      uploadFiles(ctx, POD, staging, trees, gnuTar),
      (error: unknown) =>
        error instanceof InputError &&
        /cannot pack the files to upload: .*work\/goes\.txt: Cannot stat: No such file or directory/.test(
          error.message,
        ),
    );
  });

  /** A "tar" that packs with the real one, then reports `stderr` and exits `code`, as GNU tar does on those events. */
  async function tarThatEndsWith(name: string, stderr: string, code: number): Promise<HostTar> {
    const binary = join(workspace, name);
    await writeFile(binary, `#!/bin/sh\n${gnuTar.binary} "$@"\nprintf '%s\\n' '${stderr}' >&2\nexit ${code}\n`, {
      mode: 0o755,
    });
    return { ...gnuTar, binary };
  }

  it("judges kubectl's exit, not tar's, when tar was stopped by kubectl going away", async () => {
    const { ctx, kubectl, staging } = await setUp();
    const stopped = await tarThatEndsWith("tar-broken-pipe", "tar: -: Cannot write: Broken pipe", 2);
    kubectl.on("exec", { exitCode: 1, stderr: "error: unexpected EOF\n" });
    await assert.rejects(
      uploadFiles(ctx, POD, staging, scanUploadTrees(checkout, shared), stopped),
      isInfraError("exec-failed", /upload failed|unexpected EOF/),
    );
  });

  it("blames the input when tar failed on a file of its own accord, whatever kubectl then did", async () => {
    const { ctx, kubectl, staging } = await setUp();
    const failing = await tarThatEndsWith("tar-cannot-open", "tar: work/src/main.c: Cannot open: Permission denied", 2);
    kubectl.on("exec", { exitCode: 2, stderr: "tar: Unexpected EOF in archive\n" });
    await assert.rejects(
      uploadFiles(ctx, POD, staging, scanUploadTrees(checkout, shared), failing),
      (error: unknown) =>
        error instanceof InputError && /work\/src\/main\.c: Cannot open: Permission denied/.test(error.message),
    );
  });

  it("warns and still succeeds when a file changed while tar read it (GNU tar's exit 1: each member stays whole)", async () => {
    const { ctx, kubectl, staging, eventsOf } = await setUp();
    const changed = await tarThatEndsWith("tar-file-changed", "tar: work/README: file changed as we read it", 1);
    kubectl.on("exec", honestPod({}));
    const summary = await uploadFiles(ctx, POD, staging, scanUploadTrees(checkout, shared), changed);
    assert.equal(summary.entries, 13);
    const warnings = eventsOf("notice")
      .filter((notice) => notice.level === "warning")
      .map((notice) => notice.message);
    assert.deepEqual(warnings, [
      "files changed while they were uploaded: tar: work/README: file changed as we read it",
    ]);
  });

  it("reports what tar died of when it was neither stopped by kubectl nor failed on a file", async () => {
    const { ctx, kubectl, staging } = await setUp();
    const crashing = await tarThatEndsWith("tar-crash", "tar: memory exhausted", 3);
    kubectl.on("exec", honestPod({}));
    await assert.rejects(
      uploadFiles(ctx, POD, staging, scanUploadTrees(checkout, shared), crashing),
      isInfraError("exec-failed", /upload stream failed: .*tar-crash exited 3: tar: memory exhausted/),
    );
  });

  it("stages the run's and each step's variables as export lines beside the helper, and no secret anywhere", async () => {
    const secret = "s3cret-value-never-on-disk";
    const settings = {
      ...buildTestContext().ctx.settings,
      checkoutDir: checkout,
      env: [
        { name: "CI", value: "true" },
        { name: "QUOTED", value: "it's $HOME\n" },
      ],
      steps: [
        { name: "one", script: "true", source: "s:1", env: [{ name: "ONLY_ONE", value: "1" }] },
        { name: "two", script: "true", source: "s:2" },
      ],
      secrets: [{ name: "TOKEN", value: secret }],
      shell: "bash -eo pipefail",
    };
    const staging = await stageRunnerFiles(settings);
    staged.push(staging);
    const runner = join(staging, "knotless");
    assert.equal(
      await readFile(join(runner, "env", "run.env"), "utf8"),
      "export CI='true'\nexport QUOTED='it'\\''s $HOME\n'\n",
    );
    assert.equal(await readFile(join(runner, "env", "0.env"), "utf8"), "export ONLY_ONE='1'\n");
    assert.equal(await readFile(join(runner, "env", "1.env"), "utf8"), "");
    assert.equal(await readFile(join(runner, "env", "carried.env"), "utf8"), "");
    const helper = await readFile(join(runner, "helper.sh"), "utf8");
    // The shell's words, quoted for the helper's eval, then quoted again as the value of its setting.
    assert.ok(
      helper.includes(String.raw`STEP_SHELL=''\''bash'\'' '\''-eo'\'' '\''pipefail'\'''` + "\n"),
      "the helper runs the steps with bash -eo pipefail",
    );
    assert.match(helper, /the run's secrets are not in the pod/);
    for (const file of await listFiles(runner))
      assert.ok(!(await readFile(file, "utf8")).includes(secret), `${file} holds the secret`);
    assert.ok(!(await listFiles(runner)).some((file) => file.includes("secret")), "no secrets file is staged");
  });

  it("warns about each socket, fifo or device the scan left out", async () => {
    const { ctx, kubectl, staging, eventsOf } = await setUp();
    kubectl.on("exec", honestPod({}));
    const trees = scanUploadTrees(checkout, shared);
    const withSkipped = {
      ...trees,
      work: { ...trees.work, skipped: [{ path: join(checkout, "agent.sock"), reason: "socket cannot be archived" }] },
    };
    await uploadFiles(ctx, POD, staging, withSkipped, gnuTar);
    assert.deepEqual(
      eventsOf("notice").map((notice) => notice.message),
      [`not uploaded: ${join(checkout, "agent.sock")} (socket cannot be archived)`],
    );
  });
});
