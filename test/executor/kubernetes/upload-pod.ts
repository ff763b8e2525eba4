// A scripted pod that extracts the upload: it reads the archive back and answers with its receipt and find's count.
import { Readable } from "node:stream";
import * as tarStream from "tar-stream";
import { UPLOAD_RECEIPT_ARCHIVE_PATH, expectedFindLines } from "../../../src/transfer/transfer-receipt.js";
import type { RecordedCall, ScriptedReply } from "../../support/scripted-kubectl.js";

/** The archive's member names and the receipt's content, read back with tar-stream. */
export async function readArchive(archive: Buffer): Promise<{ names: string[]; receipt: string | undefined }> {
  const extract = tarStream.extract();
  Readable.from([archive]).pipe(extract);
  const names: string[] = [];
  let receipt: string | undefined;
  for await (const entry of extract) {
    names.push(entry.header.name);
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    if (entry.header.name === UPLOAD_RECEIPT_ARCHIVE_PATH) receipt = Buffer.concat(chunks).toString("utf8");
  }
  return { names, receipt };
}

/** A pod that extracted the archive: it prints the receipt it found and the lines find would print for /work and /steps. */
export function honestPod(seen: { names?: string[] }): (call: RecordedCall) => Promise<ScriptedReply> {
  return async (call) => {
    const { names, receipt } = await readArchive(call.stdinBytes ?? Buffer.alloc(0));
    seen.names = names;
    const count = (prefix: string): number => names.filter((name) => name.startsWith(`${prefix}/`)).length;
    return {
      stdout: `${receipt ?? "\n"}${expectedFindLines([
        { entries: count("work"), nameNewlines: 0 },
        { entries: count("steps"), nameNewlines: 0 },
      ])}\n`,
    };
  };
}
