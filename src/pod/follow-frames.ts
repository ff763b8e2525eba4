// Parses the helper's `follow` output: length-prefixed frames, so the step's bytes can never pass for a frame.

export type FollowFrame =
  | { readonly type: "stdout"; readonly data: Buffer }
  | { readonly type: "stderr"; readonly data: Buffer }
  | { readonly type: "heartbeat" }
  /** Bytes of the stream the pod dropped past its output bound; undefined when the step was stopped before they were counted. */
  | { readonly type: "dropped"; readonly stream: "stdout" | "stderr"; readonly bytes: number | undefined }
  /** The exit file's content, as written by the step's wrapper in the pod. */
  | { readonly type: "exit"; readonly code: number }
  | { readonly type: "killed" }
  | { readonly type: "not-started" };

export class FollowProtocolError extends Error {
  override readonly name = "FollowProtocolError";
}

const MAX_HEADER = 40;

/**
 * Incremental parser: feed chunks as they arrive, get frames back. Payload bytes are emitted as soon as they
 * arrive (a frame split across chunks yields several data frames), so output streams live and offsets stay exact.
 */
export class FollowFrameParser {
  #header = "";
  #payloadLeft = 0;
  #payloadType: "stdout" | "stderr" = "stdout";
  #ended = false;

  /** True once an exit, killed or not-started frame was read. */
  get ended(): boolean {
    return this.#ended;
  }

  push(chunk: Buffer): FollowFrame[] {
    const frames: FollowFrame[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#ended) throw new FollowProtocolError("bytes after the final frame");
      if (this.#payloadLeft > 0) {
        const take = Math.min(this.#payloadLeft, chunk.length - at);
        frames.push({ type: this.#payloadType, data: chunk.subarray(at, at + take) });
        this.#payloadLeft -= take;
        at += take;
        continue;
      }
      const newline = chunk.indexOf(0x0a, at);
      const end = newline < 0 ? chunk.length : newline;
      this.#header += chunk.toString("latin1", at, end);
      if (this.#header.length > MAX_HEADER)
        throw new FollowProtocolError(`frame header too long: ${JSON.stringify(this.#header.slice(0, MAX_HEADER))}`);
      at = end;
      if (newline < 0) break;
      at += 1;
      const frame = this.#readHeader(this.#header);
      this.#header = "";
      if (frame) frames.push(frame);
    }
    return frames;
  }

  #readHeader(header: string): FollowFrame | undefined {
    const data = /^([OE]) (\d{1,12})$/.exec(header);
    if (data) {
      this.#payloadType = data[1] === "O" ? "stdout" : "stderr";
      this.#payloadLeft = Number(data[2]);
      return undefined;
    }
    if (header === "H") return { type: "heartbeat" };
    const dropped = /^D ([OE]) (\d{1,15}|\?)$/.exec(header);
    if (dropped)
      return {
        type: "dropped",
        stream: dropped[1] === "O" ? "stdout" : "stderr",
        bytes: dropped[2] === "?" ? undefined : Number(dropped[2]),
      };
    const exit = /^X (\d{1,3})$/.exec(header);
    if (exit) {
      this.#ended = true;
      return { type: "exit", code: Number(exit[1]) };
    }
    if (header === "K" || header === "N") {
      this.#ended = true;
      return { type: header === "K" ? "killed" : "not-started" };
    }
    throw new FollowProtocolError(`unexpected frame header ${JSON.stringify(header)}`);
  }
}
