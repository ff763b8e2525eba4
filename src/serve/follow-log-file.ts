// Streams a run's log.ndjson to one follower from byte 0, whole lines only, as fast as the follower takes them: live runs tailed up to what their sink has written, woken by each write.
import { open, type FileHandle } from "node:fs/promises";
import type { FollowerOutput } from "./follower-output.js";
import type { LogFeed } from "./log-feed.js";

/** Most bytes read from the file at once. */
const READ_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/**
 * Sends the file's lines to `output`; resolves once the file is read to its end and the run is over (`feed` absent or
 * ended), or once the follower is gone. A live run's file is read only up to `feed.length` (whole lines written); an
 * unfinished last line (a crash mid-write) is never sent. Holds at most one read and one line in memory.
 */
export async function followLogFile(path: string, feed: LogFeed | undefined, output: FollowerOutput): Promise<void> {
  let handle: FileHandle | undefined;
  let offset = 0;
  let tail = Buffer.alloc(0);
  try {
    for (;;) {
      const live = feed !== undefined && !feed.ended;
      const limit = live ? feed.length : Number.POSITIVE_INFINITY;
      if (offset >= limit) {
        await feed!.whenChanged(output.signal);
        if (output.signal.aborted) return;
        continue;
      }
      const room = await output.room(Math.min(READ_BYTES, limit - offset));
      if (room === 0) return;
      if (handle === undefined) {
        handle = await openIfThere(path);
        if (handle === undefined) return; // a run that never started has no log
      }
      // A long line held back may overshoot the room by itself: it is sent whole, once it is.
      const want = Math.min(limit - offset, Math.max(room - tail.length, 4096));
      const buffer = Buffer.allocUnsafe(want);
      const { bytesRead } = await handle.read(buffer, 0, want, offset);
      if (bytesRead === 0) {
        if (!live) return;
        await feed!.whenChanged(output.signal); // the file is shorter than the sink said (cut under it): wait for the end
        continue;
      }
      offset += bytesRead;
      const chunk =
        tail.length > 0 ? Buffer.concat([tail, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
      const end = chunk.lastIndexOf(NEWLINE);
      if (end >= 0) output.send(chunk.subarray(0, end + 1));
      tail = Buffer.from(chunk.subarray(end + 1));
    }
  } finally {
    await handle?.close();
  }
}

async function openIfThere(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
