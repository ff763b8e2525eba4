// How the runner proves a tar stream arrived whole, without copying every byte through a checksum in the pod.
//
// An extra pipe stage in the pod (`tee` into `sha256sum`, or even into `wc -c`) costs a copy of every byte on
// CPUs the pod's tar and the kubectl relay already saturate: on the fake cluster a 1 GiB upload took 2.2-2.7x as
// long as plain tar with `tee | sha256sum` in the pod, 1.4-1.6x with `tee | wc -c` (bench/RESULTS.md). So the
// pod's own tar does the counting:
// - a tar reader consumes exactly 512 bytes per header plus each body padded to 512, and checks every header's
//   checksum, so a lost or extra byte anywhere makes it fail at the next header;
// - the upload's last entry is a receipt (`knotless-upload <nonce> entries=<n>`, plus ` bytes=<offset>` from the
//   runner's packer): the pod prints it after its tar exits 0, which proves the stream reached its end. The nonce
//   is fresh per attempt, so a receipt left by an earlier attempt never matches;
// - in both directions the receiving side's entry count is compared with the sending side's (`find ... | wc -l`
//   in the pod, the scan's, packer's or extractor's count on the host). Together with the aligned headers this is a byte
//   count on both sides: the same members, each header-checked, means the same bytes consumed. It catches the
//   one loss alignment cannot see, whole entries missing from the middle.
// What neither this nor a byte count catches is a byte changed in place inside a file body; the exec stream is
// TLS-protected end to end, and the per-file sha256s of the outputs are computed on the host for result.json.

/** Path of the upload receipt in the archive (extracted at /knotless/.upload-receipt in the pod). */
export const UPLOAD_RECEIPT_ARCHIVE_PATH = "knotless/.upload-receipt";

/** The line the pod prints before the number of entries it found in /outputs. */
export const OUTPUTS_COUNT_TAG = "knotless-outputs-entries";

/** One packed tree as the pod's `find <mount> | wc -l` sees it. */
export interface CountedTree {
  /** Archive members under the tree (the tree's root itself has no member). */
  readonly entries: number;
  /** "\n" characters in those members' relative paths: `find` prints such a name over several lines. */
  readonly nameNewlines: number;
}

/** The lines `find <mount>` prints for a tree extracted into an empty mount point: its members, plus the mount. */
export function expectedFindLines(trees: readonly CountedTree[]): number {
  return trees.reduce((lines, tree) => lines + tree.entries + tree.nameNewlines + 1, 0);
}

/**
 * The receipt's content: one line, ending with a newline. `archiveBytes`, the offset of the receipt's own header, is
 * known only to the runner's packer; a host tar's archive is sized when it is done, so its receipt has none.
 */
export function buildUploadReceipt(nonce: string, entries: number, archiveBytes?: number): string {
  return `knotless-upload ${nonce} entries=${entries}${archiveBytes === undefined ? "" : ` bytes=${archiveBytes}`}\n`;
}

/** What the upload command printed after tar succeeded: the receipt it found, then the `find | wc -l` count. */
export interface UploadReply {
  readonly receipt: string;
  readonly findLines: number | undefined;
}

/** Splits the upload command's stdout (receipt line, then a number) into its parts. */
export function parseUploadReply(stdout: string): UploadReply {
  const newline = stdout.indexOf("\n");
  const receipt = newline < 0 ? stdout : stdout.slice(0, newline + 1);
  const rest = newline < 0 ? "" : stdout.slice(newline + 1).trim();
  return { receipt, findLines: /^\d+$/.test(rest) ? Number(rest) : undefined };
}

/** Why the pod's reply does not prove the upload arrived whole, or undefined when it does. */
export function checkUploadReply(
  expected: { readonly receipt: string; readonly findLines: number },
  stdout: string,
): string | undefined {
  const reply = parseUploadReply(stdout);
  if (reply.receipt !== expected.receipt) {
    const got = reply.receipt.trim() === "" ? "no receipt" : `receipt ${JSON.stringify(reply.receipt.trim())}`;
    return `the archive's last entry did not arrive intact: expected receipt ${JSON.stringify(expected.receipt.trim())}, the pod has ${got}`;
  }
  if (reply.findLines !== expected.findLines) {
    const got = reply.findLines === undefined ? "no count" : `${reply.findLines}`;
    return `the pod has ${got} lines from find under /work and /steps, expected ${expected.findLines}: entries were lost in the stream`;
  }
  return undefined;
}

/** The entry count the pod printed on stderr after packing /outputs, or undefined when it printed none. */
export function parseOutputsCount(stderr: string): number | undefined {
  const match = new RegExp(`^${OUTPUTS_COUNT_TAG} (\\d+)\\s*$`, "m").exec(stderr);
  return match ? Number(match[1]) : undefined;
}

/** Why the outputs archive does not match what the pod counted, or undefined when it does. */
export function checkOutputsCount(received: CountedTree, stderr: string): string | undefined {
  const podLines = parseOutputsCount(stderr);
  if (podLines === undefined) return "the pod did not report how many entries /outputs has";
  // The archive's "./" member stands for /outputs itself, which find prints too: no +1 here.
  const lines = received.entries + received.nameNewlines;
  if (podLines === lines) return undefined;
  return `the archive had ${received.entries} entries (${lines} lines as find prints them), the pod's find printed ${podLines} for /outputs: entries were lost in the stream`;
}
