// Tests the tar header encoder as a pure function: field layout, checksum, prefix split and PAX records.
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as tarStream from "tar-stream";
import {
  END_OF_ARCHIVE_BYTES,
  encodePaxRecord,
  encodeTarHeader,
  paddedSize,
  planTarHeader,
} from "../../src/transfer/tar-header-writer.js";
import type { TarHeader } from "../../src/transfer/tar-header-writer.js";

const MTIME = 1_714_979_289; // 2024-05-06T07:08:09Z
const EIGHT_GIB = 8 * 1024 ** 3;

function fileHeader(path: string, extra: Partial<TarHeader> = {}): TarHeader {
  return { path, type: "file", mode: 0o644, size: 10, mtimeSeconds: MTIME, ...extra };
}

/** A header field as text, up to its first NUL. */
function text(block: Buffer, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString("utf8");
}

/** The raw bytes of a header field as a latin1 string (NULs and spaces visible). */
function raw(block: Buffer, offset: number, length: number): string {
  return block.subarray(offset, offset + length).toString("latin1");
}

/** The byte sum of a block with its checksum field counted as eight spaces. */
function checksumOf(block: Buffer): number {
  let sum = 8 * 0x20;
  for (let index = 0; index < 512; index += 1) if (index < 148 || index >= 156) sum += block[index] ?? 0;
  return sum;
}

/** The PAX records of an encoded header with a PAX extended header in front, as key → value. */
function paxRecords(encoded: Buffer): Map<string, string> {
  const size = Number.parseInt(text(encoded, 124, 12), 8);
  const body = encoded.subarray(512, 512 + size);
  const records = new Map<string, string>();
  for (let at = 0; at < body.length;) {
    const space = body.indexOf(0x20, at);
    const length = Number(body.subarray(at, space).toString("latin1"));
    const record = body.subarray(space + 1, at + length).toString("utf8");
    assert.equal(record.at(-1), "\n", "a PAX record ends with a newline");
    const equals = record.indexOf("=");
    records.set(record.slice(0, equals), record.slice(equals + 1, -1));
    at += length;
  }
  return records;
}

/** The last 512-byte block of an encoded header: the ustar block of the entry itself. */
function ustarBlock(encoded: Buffer): Buffer {
  return encoded.subarray(encoded.length - 512);
}

/** Reads entries back with tar-stream from headers (plus zero content) and an end-of-archive marker. */
async function readBack(headers: readonly TarHeader[]): Promise<tarStream.Header[]> {
  const parts = headers.flatMap((header) => [encodeTarHeader(header), Buffer.alloc(paddedSize(header.size))]);
  const archive = Buffer.concat([...parts, Buffer.alloc(END_OF_ARCHIVE_BYTES)]);
  const extract = tarStream.extract();
  const seen: tarStream.Header[] = [];
  extract.on("entry", (header, stream, next) => {
    seen.push(header);
    stream.on("end", next);
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    extract.on("finish", resolve);
    extract.on("error", reject);
    Readable.from([archive]).pipe(extract);
  });
  return seen;
}

describe("encodeTarHeader", () => {
  it("writes a short file path as one ustar block with GNU tar's field layout", () => {
    const block = encodeTarHeader(fileHeader("work/src/main.ts", { mode: 0o100755, size: 1234 }));
    assert.equal(block.length, 512);
    assert.equal(raw(block, 0, 100), "work/src/main.ts".padEnd(100, "\0"));
    assert.equal(raw(block, 100, 8), "0000755\0", "mode keeps only the permission bits");
    assert.equal(raw(block, 108, 8), "0000000\0", "uid");
    assert.equal(raw(block, 116, 8), "0000000\0", "gid");
    assert.equal(raw(block, 124, 12), "00000002322\0", "size in 11 octal digits");
    assert.equal(raw(block, 136, 12), `${MTIME.toString(8).padStart(11, "0")}\0`, "mtime in 11 octal digits");
    assert.match(raw(block, 148, 8), /^[0-7]{6}\0 $/, "checksum: six digits, NUL, space");
    assert.equal(raw(block, 156, 1), "0", "typeflag of a regular file");
    assert.equal(raw(block, 157, 100), "\0".repeat(100), "no link name");
    assert.equal(raw(block, 257, 8), "ustar\u000000", "magic and version");
    assert.equal(raw(block, 265, 64), "\0".repeat(64), "no user or group name");
    assert.equal(raw(block, 329, 16), "0000000\u00000000000\0", "device numbers");
    assert.equal(raw(block, 345, 167), "\0".repeat(167), "no prefix, zero padding");
  });

  it("writes a checksum equal to the byte sum with the checksum field counted as spaces", () => {
    for (const header of [
      fileHeader("a"),
      fileHeader("é/ü.txt"),
      { path: "d/", type: "directory", mode: 0o2775, size: 0, mtimeSeconds: 0 } as const,
    ]) {
      const block = encodeTarHeader(header);
      assert.equal(Number.parseInt(raw(block, 148, 6), 8), checksumOf(block), header.path);
    }
  });

  it("marks directories with typeflag 5 and symlinks with typeflag 2 and their target in the link field", () => {
    const directory = encodeTarHeader({
      path: "work/dir/",
      type: "directory",
      mode: 0o755,
      size: 0,
      mtimeSeconds: MTIME,
    });
    assert.equal(raw(directory, 156, 1), "5");
    assert.equal(text(directory, 0, 100), "work/dir/");
    const link = encodeTarHeader({
      path: "work/link",
      type: "symlink",
      mode: 0o777,
      size: 0,
      mtimeSeconds: MTIME,
      linkTarget: "../target file",
    });
    assert.equal(raw(link, 156, 1), "2");
    assert.equal(text(link, 157, 100), "../target file");
    assert.equal(raw(link, 124, 12), "00000000000\0");
  });

  it("stores a non-ASCII path as UTF-8 bytes in the name field when those bytes fit", () => {
    const path = `work/${"é".repeat(45)}.txt`; // 5 + 90 + 4 = 99 bytes, 54 characters
    const block = encodeTarHeader(fileHeader(path));
    assert.equal(block.length, 512);
    assert.deepEqual(block.subarray(0, 99), Buffer.from(path));
    assert.equal(block[99], 0);
  });

  it("fills the name field exactly with a 100-byte path and needs no prefix", () => {
    const path = `work/${"n".repeat(95)}`;
    const block = encodeTarHeader(fileHeader(path));
    assert.equal(block.length, 512);
    assert.equal(raw(block, 0, 100), path);
    assert.equal(block[345], 0);
  });

  it("splits a longer path at the rightmost slash that leaves a prefix of at most 155 bytes, like GNU tar", () => {
    const path = `${"p".repeat(100)}/${"q".repeat(50)}/${"r".repeat(60)}/file.txt`;
    const block = encodeTarHeader(fileHeader(path));
    assert.equal(block.length, 512);
    assert.equal(text(block, 345, 155), `${"p".repeat(100)}/${"q".repeat(50)}`);
    assert.equal(text(block, 0, 100), `${"r".repeat(60)}/file.txt`);
  });

  it("uses the largest prefix and the full name field at the limits (155 + 1 + 100 bytes)", () => {
    const path = `${"p".repeat(155)}/${"n".repeat(100)}`;
    const block = encodeTarHeader(fileHeader(path));
    assert.equal(block.length, 512);
    assert.equal(raw(block, 345, 155), "p".repeat(155));
    assert.equal(raw(block, 0, 100), "n".repeat(100));
  });

  it("never splits at a directory's trailing slash, so the name part is never empty", () => {
    const splittable = encodeTarHeader({
      path: `work/${"d".repeat(99)}/`,
      type: "directory",
      mode: 0o755,
      size: 0,
      mtimeSeconds: MTIME,
    });
    assert.equal(splittable.length, 512);
    assert.equal(text(splittable, 345, 155), "work");
    assert.equal(text(splittable, 0, 100), `${"d".repeat(99)}/`);

    const single = `${"d".repeat(120)}/`;
    const unsplittable = encodeTarHeader({
      path: single,
      type: "directory",
      mode: 0o755,
      size: 0,
      mtimeSeconds: MTIME,
    });
    assert.equal(unsplittable.length, 512 * 3);
    assert.equal(paxRecords(unsplittable).get("path"), single);
  });

  it("falls back to a PAX path record when the last component alone exceeds 100 bytes", () => {
    const path = `work/${"x".repeat(120)}.txt`;
    const encoded = encodeTarHeader(fileHeader(path));
    assert.equal(encoded.length, 512 * 3);
    const pax = encoded.subarray(0, 512);
    assert.equal(raw(pax, 156, 1), "x", "typeflag of a PAX extended header");
    assert.equal(text(pax, 0, 100), "PaxHeader");
    assert.equal(raw(pax, 257, 8), "ustar\u000000");
    assert.equal(Number.parseInt(raw(pax, 148, 6), 8), checksumOf(pax));
    assert.deepEqual([...paxRecords(encoded)], [["path", path]]);
    const body = Number.parseInt(text(pax, 124, 12), 8);
    assert.ok(
      encoded.subarray(512 + body, 1024).every((byte) => byte === 0),
      "the PAX body is zero-padded to a block",
    );
    const entry = ustarBlock(encoded);
    assert.equal(raw(entry, 0, 100), path.slice(0, 100), "the name field keeps the path's first 100 bytes");
    assert.equal(raw(entry, 156, 1), "0");
    assert.equal(Number.parseInt(raw(entry, 148, 6), 8), checksumOf(entry));
  });

  it("falls back to a PAX path record when a path is longer than 256 bytes", () => {
    const path = Array.from({ length: 50 }, (_, index) => `dir${index}`).join("/") + "/leaf.txt";
    assert.ok(Buffer.byteLength(path) > 256);
    const encoded = encodeTarHeader(fileHeader(path));
    assert.equal(paxRecords(encoded).get("path"), path);
    assert.equal(ustarBlock(encoded)[345], 0, "no prefix next to a PAX path");
  });

  it("counts a non-ASCII path in UTF-8 bytes, for the split and for the PAX record length", () => {
    const component = "é".repeat(51); // 51 characters, 102 bytes
    const encoded = encodeTarHeader(fileHeader(`work/${component}`));
    assert.equal(encoded.length, 512 * 3);
    assert.equal(paxRecords(encoded).get("path"), `work/${component}`);
  });

  it("keeps a 100-byte symlink target in the link field and moves a longer one to a PAX linkpath record", () => {
    const fits = "t".repeat(100);
    const short = encodeTarHeader({
      path: "l",
      type: "symlink",
      mode: 0o777,
      size: 0,
      mtimeSeconds: MTIME,
      linkTarget: fits,
    });
    assert.equal(short.length, 512);
    assert.equal(raw(short, 157, 100), fits);

    const long = `${"../".repeat(20)}${"t".repeat(60)}`;
    const encoded = encodeTarHeader({
      path: "l",
      type: "symlink",
      mode: 0o777,
      size: 0,
      mtimeSeconds: MTIME,
      linkTarget: long,
    });
    assert.deepEqual([...paxRecords(encoded)], [["linkpath", long]]);
    assert.equal(text(ustarBlock(encoded), 0, 100), "l");
    assert.equal(raw(ustarBlock(encoded), 157, 100), long.slice(0, 100));
  });

  it("writes sizes up to 8 GiB - 1 in octal and a size of 8 GiB or more as a PAX size record", () => {
    const largest = encodeTarHeader(fileHeader("big", { size: EIGHT_GIB - 1 }));
    assert.equal(largest.length, 512);
    assert.equal(raw(largest, 124, 12), "77777777777\0");

    for (const size of [EIGHT_GIB, 5 * 1024 ** 4 + 3]) {
      const encoded = encodeTarHeader(fileHeader("big", { size }));
      assert.deepEqual([...paxRecords(encoded)], [["size", String(size)]]);
      const field = ustarBlock(encoded).subarray(124, 136);
      assert.equal(field[0], 0x80, "GNU base-256 marker for readers without PAX");
      assert.equal(field.readUIntBE(6, 6), size);
      assert.equal(Number.parseInt(raw(ustarBlock(encoded), 148, 6), 8), checksumOf(ustarBlock(encoded)));
    }
  });

  it("writes an mtime before 1970 as 0 in the field and exactly in a PAX mtime record", () => {
    const encoded = encodeTarHeader(fileHeader("old", { mtimeSeconds: -86_400 }));
    assert.deepEqual([...paxRecords(encoded)], [["mtime", "-86400"]]);
    assert.equal(raw(ustarBlock(encoded), 136, 12), "00000000000\0");
  });

  it("puts every record that is needed into one PAX header, path first", () => {
    const path = `work/${"y".repeat(150)}`;
    const target = "z".repeat(150);
    const encoded = encodeTarHeader({
      path,
      type: "symlink",
      mode: 0o777,
      size: 0,
      mtimeSeconds: MTIME,
      linkTarget: target,
    });
    assert.deepEqual(
      [...paxRecords(encoded)],
      [
        ["path", path],
        ["linkpath", target],
      ],
    );
  });

  it("plans the byte length it writes", () => {
    for (const header of [fileHeader("a"), fileHeader(`w/${"x".repeat(600)}`), fileHeader("s", { size: EIGHT_GIB })]) {
      assert.equal(planTarHeader(header).byteLength, encodeTarHeader(header).length);
    }
  });

  it("is read back by tar-stream with the same path, type, mode, size, mtime and link target", async () => {
    const headers: TarHeader[] = [
      fileHeader("work/plain.txt", { mode: 0o600, size: 3 }),
      fileHeader(`work/${"a".repeat(90)}/${"b".repeat(90)}/c.txt`),
      fileHeader(`work/${"x".repeat(200)}`, { size: 700 }),
      fileHeader(`work/naïve/${"ü".repeat(70)}`),
      fileHeader("work/line\nbreak"),
      { path: "work/dir/", type: "directory", mode: 0o750, size: 0, mtimeSeconds: MTIME },
      { path: "work/link", type: "symlink", mode: 0o777, size: 0, mtimeSeconds: MTIME, linkTarget: "t/".repeat(80) },
    ];
    const seen = await readBack(headers);
    assert.deepEqual(
      seen.map((header) => [
        header.name,
        header.type,
        header.mode,
        header.size,
        (header.mtime?.getTime() ?? 0) / 1000,
        header.linkname ?? undefined,
      ]),
      headers.map((header) => [
        header.path,
        header.type,
        header.mode,
        header.size,
        header.mtimeSeconds,
        header.linkTarget,
      ]),
    );
    assert.ok(
      seen.every((header) => header.uid === 0 && header.gid === 0 && header.uname === "" && header.gname === ""),
    );
  });
});

describe("encodePaxRecord", () => {
  it("prefixes a record with its own length in bytes, digits included", () => {
    assert.equal(encodePaxRecord("path", "a"), "9 path=a\n");
    assert.equal(encodePaxRecord("path", "é"), "11 path=é\n");
  });

  it("adds a digit when counting the length's own digits crosses a power of ten", () => {
    // " path=" + value + "\n" is 7 bytes + value; 8 bytes need one digit (9), 9 bytes would make 10: two digits, 11.
    assert.equal(encodePaxRecord("path", "v"), "9 path=v\n");
    assert.equal(encodePaxRecord("path", "vv"), "11 path=vv\n");
    // 97 bytes + 2 digits = 99; 98 bytes + 2 digits = 100, which has 3 digits: 101.
    assert.equal(encodePaxRecord("path", "v".repeat(90)).slice(0, 3), "99 ");
    assert.equal(encodePaxRecord("path", "v".repeat(91)).slice(0, 4), "101 ");
    assert.equal(encodePaxRecord("path", "v".repeat(92)).slice(0, 4), "102 ");
  });

  it("declares exactly its own byte length for every value length from 0 to 1100 bytes", () => {
    for (let length = 0; length <= 1100; length += 1) {
      const record = encodePaxRecord("linkpath", "é".repeat(length >> 1) + "v".repeat(length & 1));
      const declared = Number(record.slice(0, record.indexOf(" ")));
      assert.equal(declared, Buffer.byteLength(record), record.slice(0, 12));
    }
  });
});
