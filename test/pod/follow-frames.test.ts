import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FollowFrameParser, FollowProtocolError, type FollowFrame } from "../../src/pod/follow-frames.js";

function feed(parser: FollowFrameParser, bytes: Buffer, chunkSize: number): FollowFrame[] {
  const frames: FollowFrame[] = [];
  for (let at = 0; at < bytes.length; at += chunkSize) frames.push(...parser.push(bytes.subarray(at, at + chunkSize)));
  return frames;
}

function collect(frames: FollowFrame[]): { stdout: string; stderr: string; rest: string[] } {
  const out = { stdout: "", stderr: "", rest: [] as string[] };
  for (const frame of frames) {
    if (frame.type === "stdout" || frame.type === "stderr") out[frame.type] += frame.data.toString();
    else if (frame.type === "dropped") out.rest.push(`dropped ${frame.stream} ${frame.bytes ?? "?"}`);
    else out.rest.push(frame.type === "exit" ? `exit ${frame.code}` : frame.type);
  }
  return out;
}

describe("FollowFrameParser", () => {
  const stream = Buffer.from("O 6\nhello\nE 4\noopsH\nO 3\nX 7X 3\n");

  it("separates stdout, stderr, heartbeats and the exit code", () => {
    const result = collect(new FollowFrameParser().push(stream));
    assert.deepEqual(result, { stdout: "hello\nX 7", stderr: "oops", rest: ["heartbeat", "exit 3"] });
  });

  it("gives the same result when the bytes arrive one at a time", () => {
    const parser = new FollowFrameParser();
    assert.deepEqual(collect(feed(parser, stream, 1)), {
      stdout: "hello\nX 7",
      stderr: "oops",
      rest: ["heartbeat", "exit 3"],
    });
    assert.equal(parser.ended, true);
  });

  it("cannot be fooled by step output that looks like a frame", () => {
    const forged = Buffer.from("X 0\n");
    const bytes = Buffer.concat([Buffer.from(`O ${forged.length}\n`), forged]);
    const parser = new FollowFrameParser();
    const result = collect(parser.push(bytes));
    assert.equal(result.stdout, "X 0\n");
    assert.deepEqual(result.rest, []);
    assert.equal(parser.ended, false);
  });

  it("reports killed and never-started steps as final frames", () => {
    assert.deepEqual(collect(new FollowFrameParser().push(Buffer.from("K\n"))).rest, ["killed"]);
    assert.deepEqual(collect(new FollowFrameParser().push(Buffer.from("N\n"))).rest, ["not-started"]);
  });

  it("reads the bytes the pod dropped past its bound, counted or not, before the final frame", () => {
    const result = collect(new FollowFrameParser().push(Buffer.from("O 2\nhiD O 123456789012\nD E ?\nX 0\n")));
    assert.deepEqual(result, {
      stdout: "hi",
      stderr: "",
      rest: ["dropped stdout 123456789012", "dropped stderr ?", "exit 0"],
    });
    assert.throws(() => new FollowFrameParser().push(Buffer.from("D X 1\n")), FollowProtocolError);
    assert.throws(() => new FollowFrameParser().push(Buffer.from("D O -1\n")), FollowProtocolError);
  });

  it("throws a protocol error on an unknown header or an endless one", () => {
    assert.throws(() => new FollowFrameParser().push(Buffer.from("Z 1\n")), FollowProtocolError);
    assert.throws(() => new FollowFrameParser().push(Buffer.from("O ".padEnd(100, "9"))), FollowProtocolError);
  });

  it("throws when bytes follow the final frame", () => {
    assert.throws(() => new FollowFrameParser().push(Buffer.from("X 0\nO 1\na")), FollowProtocolError);
  });
});
