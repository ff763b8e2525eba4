// Pure pieces of the Kubernetes remote-command WebSocket protocol (channel bytes, exit Status messages).

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const STATUS = 3;
export const RESIZE = 4;
export const CLOSE = 255;

export const SUPPORTED_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;

/** Picks the best sub-protocol the client offers, or undefined when none is supported. */
export function selectProtocol(offered: Iterable<string>): string | undefined {
  const set = new Set(offered);
  return SUPPORTED_PROTOCOLS.find((p) => set.has(p));
}

/** A frame on one channel: the channel byte, then the payload. */
export function encodeFrame(channel: number, payload: Buffer | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const frame = Buffer.allocUnsafe(body.length + 1);
  frame[0] = channel;
  body.copy(frame, 1);
  return frame;
}

/** The Status kubectl reads on channel 3: Success, or NonZeroExitCode with the code as a cause (kubectl exits with it). */
export function buildExitStatus(exitCode: number, command: readonly string[]): object {
  if (exitCode === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${command.join(" ")}], exit code ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

/** The Status for an exec that could not run at all (not an exit code of the command). */
export function buildInternalErrorStatus(message: string): object {
  return {
    metadata: {},
    status: "Failure",
    message,
    reason: "InternalError",
    details: { causes: [{ message }] },
    code: 500,
  };
}
