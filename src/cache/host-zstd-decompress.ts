// A streaming zstd decompressor that runs the host's own zstd (native, about ten times fzstd's speed), behind the same frame walk's bounds.
import { spawn } from "node:child_process";
import { Duplex } from "node:stream";
import { CacheArchiveError } from "./archive-checker.js";
import { MAX_ZSTD_WINDOW_BYTES, ZstdFrameScanner } from "./zstd-frames.js";

/** What is kept of zstd's stderr for the error message. */
const MAX_STDERR_BYTES = 4096;

/**
 * A Duplex from zstd to the bytes it decodes to, like createZstdDecompress, with `zstd -d` at `zstdPath` doing the
 * decoding in a child process. Only for a sink that takes the output whatever it is (the save's check): the output
 * cannot be matched to the input it came from, so the restore's gate, which lets input through only once its output
 * was checked, keeps fzstd.
 *
 * Every input byte passes the frame walk first (a window over MAX_ZSTD_WINDOW_BYTES, a reserved bit, a dictionary,
 * data after a frame or a cut frame are refused with the same words as fzstd's path), and zstd runs with
 * `--memory` at the same bound. Unlike fzstd, zstd verifies the frames' content checksums. The child gets no
 * environment, reads only its stdin and writes only its stdout; it is killed when the stream is destroyed. Output
 * is read only as fast as it is consumed (the pipe holds the rest), so memory stays at a few chunks. Errors with
 * CacheArchiveError for data that is not zstd, a bound crossed, a cut stream, a bad checksum, or a zstd that could
 * not run.
 */
export function createHostZstdDecompress(zstdPath: string): Duplex {
  const scanner = new ZstdFrameScanner();
  const child = spawn(zstdPath, ["-d", "-c", "-q", "--no-progress", `--memory=${MAX_ZSTD_WINDOW_BYTES / (1024 * 1024)}MiB`], { stdio: ["pipe", "pipe", "pipe"], env: {} });
  let stderr = "";
  let failure: CacheArchiveError | undefined;
  const exited = new Promise<CacheArchiveError | undefined>((resolve) => {
    child.once("error", (error) => resolve(new CacheArchiveError(`the host's zstd (${zstdPath}) could not run: ${error.message}`)));
    child.once("close", (code, signal) => {
      if (code === 0) return resolve(undefined);
      const said = stderr.trim().split("\n").at(-1)?.replace(/^(zstd: )?\/\*stdin\*\\\s*:\s*/, "") ?? "";
      resolve(new CacheArchiveError(`cache archive is not valid zstd: ${said !== "" ? said : signal !== null ? `zstd was killed by ${signal}` : `zstd exited with ${code}`}`));
    });
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => {
    if (stderr.length < MAX_STDERR_BYTES) stderr += text.slice(0, MAX_STDERR_BYTES - stderr.length);
  });
  // The child may exit before taking all its input (bad data): what is still written then has nowhere to go.
  child.stdin.on("error", () => undefined);

  const stream = new Duplex({
    readableHighWaterMark: 1024 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      if (failure !== undefined) return callback(failure);
      try {
        scanner.push(chunk);
      } catch (error) {
        return callback(error as CacheArchiveError);
      }
      if (child.stdin.write(chunk)) return callback();
      const onDrain = (): void => {
        child.off("close", onDrain);
        child.stdin.off("drain", onDrain);
        callback();
      };
      child.stdin.once("drain", onDrain);
      child.once("close", onDrain);
    },
    final(callback) {
      try {
        scanner.finish();
      } catch (error) {
        return callback(error as CacheArchiveError);
      }
      child.stdin.end();
      void exited.then((problem) => {
        if (problem !== undefined) return callback(problem);
        stream.push(null);
        callback();
      });
    },
    read() {
      child.stdout.resume();
    },
    destroy(error, callback) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      callback(error);
    },
  });
  child.stdout.on("data", (data: Buffer) => {
    if (!stream.push(data)) child.stdout.pause();
  });
  // A child that fails before the input's end (bad data, or it could not start) fails the stream at once.
  void exited.then((problem) => {
    if (problem === undefined) return;
    failure = problem;
    stream.destroy(problem);
  });
  return stream;
}
