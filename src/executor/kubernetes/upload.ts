// Streams the checkout, the shared steps and the runner's own files into the pod as one tar, with a receipt the pod checks.
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { InfraError, InputError, describeError } from "../../core/errors.js";
import { isExecSuccess } from "../../cluster/exec.js";
import { readStepShell } from "../../workflow/step-environment.js";
import { buildEnvFile } from "../../pod/env-file.js";
import { buildHelperScript, buildUploadCommand } from "../../pod/helper-script.js";
import {
  parseTotalBytes,
  probeHostTar,
  spawnHostTar,
  stoppedByReader,
  tarComplaints,
  type HostTar,
  type HostTarSetting,
} from "../../transfer/host-tar.js";
import { PackStoppedError, packTrees, type PackRoot, type PackStats } from "../../transfer/pack-tree.js";
import { scanTree, type TreeScan, type UploadTrees } from "../../transfer/scan-tree.js";
import {
  UPLOAD_RECEIPT_ARCHIVE_PATH,
  buildUploadReceipt,
  checkUploadReply,
  expectedFindLines,
  type CountedTree,
} from "../../transfer/transfer-receipt.js";
import { buildPodExec, type ExecutorContext, type RunSettings } from "./context.js";
import type { RunPod, UploadSummary } from "../executor.js";
import { withExecRetry, type ExecAttempt } from "./exec-retry.js";

/** Where the staging directory keeps the runner's own files (packed under /knotless) and links to the other roots. */
const RUNNER_ROOT = "knotless";
const WORK_ROOT = "work";
const STEPS_ROOT = "steps";

/**
 * Makes the upload's staging directory: `knotless/` holds helper.sh, steps/N.sh and the steps' environment files
 * (env/run.env, env/N.env, an empty env/carried.env), and the links `work` and `steps` point at the checkout and the
 * shared-steps directory, so one GNU tar names every member as it lands under `/` (`work/src/main.c` is read through
 * the link, the link itself is never archived). Secrets are never staged: they go over their own exec's stdin.
 */
export async function stageRunnerFiles(
  settings: Pick<RunSettings, "steps" | "checkoutDir" | "sharedStepsDir" | "env" | "shell" | "secrets" | "maxLogBytes">,
  beatSeconds?: number,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "knotless-runner-"));
  const runner = join(dir, RUNNER_ROOT);
  await mkdir(join(runner, "steps"), { recursive: true });
  await mkdir(join(runner, "env"));
  const helper = buildHelperScript({
    shell: readStepShell(settings.shell),
    secrets: (settings.secrets?.length ?? 0) > 0,
    ...(beatSeconds === undefined ? {} : { beatSeconds }),
    ...(settings.maxLogBytes === undefined ? {} : { outputBoundBytes: settings.maxLogBytes }),
  });
  await writeFile(join(runner, "helper.sh"), helper, { mode: 0o755 });
  await writeFile(join(runner, "env", "run.env"), buildEnvFile(settings.env), { mode: 0o644 });
  await writeFile(join(runner, "env", "carried.env"), "", { mode: 0o644 });
  await Promise.all(
    settings.steps.flatMap((step, index) => [
      writeFile(join(runner, "steps", `${index}.sh`), `${step.script}\n`, { mode: 0o644 }),
      writeFile(join(runner, "env", `${index}.env`), buildEnvFile(step.env ?? []), { mode: 0o644 }),
    ]),
  );
  await symlink(resolve(settings.checkoutDir), join(dir, WORK_ROOT));
  if (settings.sharedStepsDir !== undefined) await symlink(resolve(settings.sharedStepsDir), join(dir, STEPS_ROOT));
  return dir;
}

/** The host tar to pack with: the setting's when it is GNU tar 1.29 or later, else undefined (the runner's own packer). */
export function chooseHostTar(setting: HostTarSetting | undefined): Promise<HostTar | undefined> {
  return setting === undefined ? Promise.resolve(undefined) : probeHostTar(setting);
}

/**
 * Uploads everything the steps need in one exec; the archive is never held in memory. `staging` is the directory
 * stageRunnerFiles made (the executor stages while the pod starts and removes it at teardown, off the run's path);
 * `trees` are the scans runWorkflow made before the Job existed. A host GNU tar (`hostTar`) packs when there is
 * one, straight into kubectl's stdin; otherwise the runner's own packer streams through node.
 */
export async function uploadFiles(
  ctx: ExecutorContext,
  pod: RunPod,
  staging: string,
  trees: UploadTrees,
  hostTar: HostTar | undefined,
): Promise<UploadSummary> {
  for (const tree of [trees.work, trees.steps]) {
    for (const skipped of tree?.skipped ?? [])
      ctx.emit({ kind: "notice", level: "warning", message: `not uploaded: ${skipped.path} (${skipped.reason})` });
  }
  const runner = scanTree(join(staging, RUNNER_ROOT), RUNNER_ROOT); // before any receipt is written into it
  const scans = [runner, trees.work, ...(trees.steps ? [trees.steps] : [])];
  const expected = {
    entries: scans.reduce((sum, scan) => sum + scan.entries, 0),
    // An absent shared-steps directory leaves /steps an empty mount point: find still prints it.
    findLines: expectedFindLines([trees.work, trees.steps ?? { entries: 0, nameNewlines: 0 }]),
  };
  return await withExecRetry(ctx, pod, "upload", "exec-failed", () =>
    hostTar ? uploadWithHostTar(ctx, pod, staging, hostTar, scans, expected) : uploadWithPacker(ctx, pod, staging),
  );
}

type Attempt = ExecAttempt<UploadSummary>;

/** How long a host tar may outlive the kubectl it writes into before it is killed. */
const TAR_GRACE_AFTER_KUBECTL_MS = 5000;

/** One attempt through the host's GNU tar: node writes the list of names; tar writes the archive into kubectl. */
async function uploadWithHostTar(
  ctx: ExecutorContext,
  pod: RunPod,
  staging: string,
  hostTar: HostTar,
  scans: readonly TreeScan[],
  expected: { entries: number; findLines: number },
): Promise<Attempt> {
  const receipt = buildUploadReceipt(randomBytes(8).toString("hex"), expected.entries);
  await writeFile(join(staging, UPLOAD_RECEIPT_ARCHIVE_PATH), receipt, { mode: 0o644 });
  const tar = spawnHostTar(hostTar, staging, [
    ...scans.map((scan) => scan.names),
    Buffer.from(`${UPLOAD_RECEIPT_ARCHIVE_PATH}\0`),
  ]);
  // The transport owns tar's stdout from here (kubectl gets its descriptor: the archive skips this process).
  const exec = await ctx.cluster.exec({
    ...buildPodExec(ctx, pod.name, buildUploadCommand(ctx.timings.beatSeconds)),
    stdin: { kind: "stream", from: tar.stdout },
  });
  // A cancel ends tar at once. Once the exec is gone tar's next write fails on the closed socket and it exits by
  // itself (it may also be printing its totals after its last byte); one still there after a grace is stuck: end it.
  let killedTar = false;
  const stopTar = (): void => {
    killedTar = tar.kill() || killedTar;
  };
  let lingering: NodeJS.Timeout | undefined;
  ctx.signal.addEventListener("abort", stopTar, { once: true });
  let reply = "";
  exec.stdout.setEncoding("utf8").on("data", (text: string) => (reply += text));
  const execGone = exec.ended.finally(() => (lingering = setTimeout(stopTar, TAR_GRACE_AFTER_KUBECTL_MS)));
  const [end, packed] = await Promise.all([execGone, tar.exited]).finally(() => {
    clearTimeout(lingering);
    ctx.signal.removeEventListener("abort", stopTar);
  });
  // A tar stopped because kubectl went away (a closed pipe, or killed by us) is judged by kubectl's exit like any
  // exec; a kubectl that exits 0 having closed the pipe early failed the stream all the same (like the packer's EPIPE).
  const stopped = stoppedByReader(packed) || killedTar || ctx.signal.aborted;
  if (packed.exitCode === 2 && !stopped)
    throw new InputError(`cannot pack the files to upload: ${tarComplaints(packed.stderr) || "tar exited 2"}`);
  if (!isExecSuccess(end)) return { ok: false, end };
  if (stoppedByReader(packed))
    throw new InfraError(
      "exec-failed",
      `upload stream failed: kubectl exited 0 without reading the whole archive (${tarComplaints(packed.stderr) || packed.signal})`,
    );
  if (packed.exitCode !== 0 && packed.exitCode !== 1 && !stopped) {
    const how = packed.signal ? `was killed by ${packed.signal}` : `exited ${packed.exitCode ?? "without a status"}`;
    throw new InfraError(
      "exec-failed",
      `upload stream failed: ${hostTar.binary} ${how}${packed.stderr ? `: ${tarComplaints(packed.stderr)}` : ""}`,
    );
  }
  // GNU tar's 1: a file changed while it was read. Its member is still whole (tar pads or cuts it to the size it
  // announced), so the archive stays valid; the checkout changed under the run, which the operator should hear of.
  if (packed.exitCode === 1)
    ctx.emit({
      kind: "notice",
      level: "warning",
      message: `files changed while they were uploaded: ${tarComplaints(packed.stderr)}`,
    });
  const archiveBytes = parseTotalBytes(packed.stderr);
  const mismatch = checkUploadReply({ receipt, findLines: expected.findLines }, reply);
  if (mismatch !== undefined)
    throw new InfraError(
      "integrity-mismatch",
      `upload integrity check failed after sending ${archiveBytes === undefined ? "an archive of unknown size" : `${archiveBytes} bytes`}: ${mismatch}`,
    );
  const files = scans.reduce((sum, scan) => sum + scan.files, 0);
  return { ok: true, value: { files, bytes: undefined, archiveBytes: archiveBytes ?? 0, entries: expected.entries } };
}

/** One attempt through the runner's own packer, whose bytes pass through node on their way into kubectl. */
async function uploadWithPacker(ctx: ExecutorContext, pod: RunPod, staging: string): Promise<Attempt> {
  const { settings } = ctx;
  const roots: PackRoot[] = [
    { hostDir: join(staging, RUNNER_ROOT), archivePrefix: RUNNER_ROOT },
    { hostDir: settings.checkoutDir, archivePrefix: WORK_ROOT },
    ...(settings.sharedStepsDir ? [{ hostDir: settings.sharedStepsDir, archivePrefix: STEPS_ROOT }] : []),
  ];
  let receipt: string | undefined;
  const nonce = randomBytes(8).toString("hex");
  const archive = packTrees(roots, {
    trailer: (packed) => {
      receipt = buildUploadReceipt(
        nonce,
        packed.entriesByRoot.reduce((sum, n) => sum + n, 0),
        packed.archiveBytes,
      );
      return { path: UPLOAD_RECEIPT_ARCHIVE_PATH, content: Buffer.from(receipt) };
    },
  });
  const exec = await ctx.cluster.exec({
    ...buildPodExec(ctx, pod.name, buildUploadCommand(ctx.timings.beatSeconds)),
    stdin: { kind: "pipe" },
  });
  let reply = "";
  exec.stdout.setEncoding("utf8").on("data", (text: string) => (reply += text));
  const piped = pipeline(archive.stream, writingBack(exec.stdin!, archive.giveBack)).then(
    () => undefined,
    (error: unknown) => error,
  );
  const stats = await archive.done.catch((error: unknown) =>
    error instanceof Error ? error : new Error(String(error)),
  );
  const end = await exec.ended;
  const pipeError = await piped;
  // A host file that could not be packed is bad input; packing stopped because kubectl went away is kubectl's
  // failure, judged by its exit like any exec.
  if (stats instanceof Error && !(stats instanceof PackStoppedError))
    throw new InputError(`cannot pack the files to upload: ${stats.message}`);
  if (!isExecSuccess(end)) return { ok: false, end };
  if (pipeError || stats instanceof Error)
    throw new InfraError("exec-failed", `upload stream failed: ${describeError(pipeError ?? stats)}`);
  const mismatch = receipt
    ? checkUploadReply({ receipt, findLines: expectedFindLines(countMounts(stats, roots)) }, reply)
    : "the archive was never finished";
  if (mismatch !== undefined) {
    throw new InfraError(
      "integrity-mismatch",
      `upload integrity check failed after sending ${stats.archiveBytes} bytes: ${mismatch}`,
    );
  }
  const entries = stats.entriesByRoot.reduce((sum, n) => sum + n, 0);
  return { ok: true, value: { files: stats.files, bytes: stats.bytes, archiveBytes: stats.archiveBytes, entries } };
}

/** What the pod's `find /work /steps` should see: the roots packed under these prefixes (an absent one is empty). */
function countMounts(packed: PackStats, roots: readonly PackRoot[]): CountedTree[] {
  return [WORK_ROOT, STEPS_ROOT].map((prefix) => {
    const index = roots.findIndex((root) => root.archivePrefix === prefix);
    return { entries: packed.entriesByRoot[index] ?? 0, nameNewlines: packed.nameNewlinesByRoot[index] ?? 0 };
  });
}

/**
 * A Writable in front of kubectl's stdin that gives each chunk back to the packer once stdin has written
 * it, so the packer refills the same few batches (BatchPool). Writes go one at a time, like a pipe into
 * stdin would (it waits for "drain" after each batch-sized write); errors and the end pass through.
 */
function writingBack(stdin: Writable, giveBack: (chunk: Buffer) => void): Writable {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      stdin.write(chunk, (error) => {
        if (!error) giveBack(chunk);
        callback(error);
      });
    },
    final(callback) {
      stdin.end(callback);
    },
    destroy(error, callback) {
      if (error) stdin.destroy(error);
      callback(error);
    },
  });
  stdin.on("error", (error) => sink.destroy(error));
  return sink;
}
