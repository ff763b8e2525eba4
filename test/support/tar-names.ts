// Reads a tar archive's member names (and symlink targets) with tar-stream, an implementation independent of ours.
import { Readable } from "node:stream";
import * as tarStream from "tar-stream";

export interface ArchiveMember {
  readonly name: string;
  readonly type: string;
  readonly linkname: string | null;
  readonly content: Buffer;
}

export async function readArchiveMembers(archive: Buffer): Promise<ArchiveMember[]> {
  const extract = tarStream.extract();
  Readable.from([archive]).pipe(extract);
  const members: ArchiveMember[] = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    members.push({
      name: entry.header.name,
      type: entry.header.type ?? "file",
      linkname: entry.header.linkname ?? null,
      content: Buffer.concat(chunks),
    });
  }
  return members;
}

export async function readArchiveNames(archive: Buffer): Promise<string[]> {
  return (await readArchiveMembers(archive)).map((member) => member.name);
}
