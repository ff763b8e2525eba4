// Tests the pure tar header block decoder: formats, numbers, checksums and type names.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  TarFormatError,
  decodeHeaderBlock,
  hasData,
  isZeroBlock,
  readNumber,
  sparseExtensionContinues,
} from "../../src/transfer/tar-header.js";
import { base256, rawHeader } from "./tar-fixtures.js";

describe("decodeHeaderBlock", () => {
  it("decodes a ustar header's name, mode, size, mtime, type and link name", () => {
    const header = decodeHeaderBlock(
      rawHeader({
        name: "./dir/link",
        mode: 0o4755,
        size: 0,
        mtime: 1_234_567_890,
        typeflag: "2",
        linkname: "../target",
      }),
      0,
    );
    assert.deepEqual(header, {
      name: "./dir/link",
      linkname: "../target",
      type: "symlink",
      mode: 0o4755,
      size: 0,
      mtime: 1_234_567_890,
      format: "ustar",
      sparseExtended: false,
    });
  });

  it("decodes a header that starts anywhere in a buffer", () => {
    const buffer = Buffer.concat([Buffer.alloc(700, 0x41), rawHeader({ name: "./a.txt", size: 5 })]);
    assert.equal(decodeHeaderBlock(buffer, 700).name, "./a.txt");
  });

  it("joins a ustar prefix and name with a slash", () => {
    const header = decodeHeaderBlock(rawHeader({ name: "file.txt", prefix: `./${"p".repeat(150)}` }), 0);
    assert.equal(header.name, `./${"p".repeat(150)}/file.txt`);
  });

  it("ignores the prefix area of a GNU header, where old GNU tar keeps times and sparse data", () => {
    const header = decodeHeaderBlock(rawHeader({ name: "./file.txt", magic: "gnu", prefix: "not-a-prefix" }), 0);
    assert.equal(header.format, "gnu");
    assert.equal(header.name, "./file.txt");
  });

  it("reads a v7 header without magic, and a regular file entry named with a trailing slash as a directory", () => {
    const file = decodeHeaderBlock(rawHeader({ name: "old.txt", magic: "v7", typeflag: "\0", prefix: "ignored" }), 0);
    assert.equal(file.format, "v7");
    assert.equal(file.type, "file");
    assert.equal(file.name, "old.txt");
    assert.equal(decodeHeaderBlock(rawHeader({ name: "olddir/", magic: "v7", typeflag: "\0" }), 0).type, "directory");
    assert.equal(decodeHeaderBlock(rawHeader({ name: "dir/", typeflag: "0" }), 0).type, "directory");
  });

  it("decodes names as UTF-8 up to the first NUL", () => {
    assert.equal(decodeHeaderBlock(rawHeader({ name: "./été-日本.txt" }), 0).name, "./été-日本.txt");
    assert.equal(decodeHeaderBlock(rawHeader({ name: "./a\u0000hidden" }), 0).name, "./a");
  });

  it("reads a base-256 size beyond what the octal field can hold", () => {
    const size = 10 * 1024 ** 3 + 7;
    assert.equal(decodeHeaderBlock(rawHeader({ sizeField: base256(BigInt(size)) }), 0).size, size);
  });

  it("reads a negative base-256 mtime, as GNU tar writes times before 1970", () => {
    assert.equal(decodeHeaderBlock(rawHeader({ mtimeField: base256(-1n) }), 0).mtime, -1);
    assert.equal(decodeHeaderBlock(rawHeader({ mtimeField: base256(-86_400n) }), 0).mtime, -86_400);
  });

  it("refuses a negative size", () => {
    assert.throws(() => decodeHeaderBlock(rawHeader({ sizeField: base256(-5n) }), 0), /negative size/);
  });

  it("refuses a base-256 number too large to be exact", () => {
    assert.throws(() => decodeHeaderBlock(rawHeader({ sizeField: base256(2n ** 60n) }), 0), /size field is too large/);
  });

  it("masks the mode to permission and set-id bits", () => {
    assert.equal(decodeHeaderBlock(rawHeader({ mode: 0o100644 }), 0).mode, 0o644);
  });

  it("rejects a header whose checksum does not match its bytes", () => {
    const block = rawHeader({ name: "./a.txt" });
    block[10] = 0x41;
    assert.throws(
      () => decodeHeaderBlock(block, 0),
      (error: unknown) => error instanceof TarFormatError && /^Invalid tar header: its checksum/.test(error.message),
    );
  });

  it("accepts a checksum computed over signed bytes, as some old tars did", () => {
    const header = decodeHeaderBlock(rawHeader({ name: "./ÿé.txt", checksum: "signed" }), 0);
    assert.equal(header.name, "./ÿé.txt");
  });

  it("rejects a stored checksum of zero on a non-zero block", () => {
    assert.throws(() => decodeHeaderBlock(rawHeader({ name: "./a", checksum: 0 }), 0), TarFormatError);
  });

  it("rejects a numeric field with a character that is not an octal digit", () => {
    assert.throws(
      () => decodeHeaderBlock(rawHeader({ sizeField: Buffer.from("0000000009\0\0") }), 0),
      /size field is not an octal number/,
    );
    assert.throws(
      () => decodeHeaderBlock(rawHeader({ modeField: Buffer.from("00x0644\0") }), 0),
      /mode field is not an octal number/,
    );
  });

  it("names the type of every typeflag, and unknown ones by their code", () => {
    const typeOf = (typeflag: string): string => decodeHeaderBlock(rawHeader({ name: "./n", typeflag }), 0).type;
    assert.deepEqual(
      ["0", "1", "2", "3", "4", "5", "6", "7", "x", "X", "g", "L", "K", "S", "D", "M", "V", "N", "Z"].map(typeOf),
      [
        "file",
        "link",
        "symlink",
        "character-device",
        "block-device",
        "directory",
        "fifo",
        "contiguous-file",
        "pax-header",
        "pax-header",
        "pax-global-header",
        "gnu-long-path",
        "gnu-long-link-path",
        "gnu-sparse",
        "gnu-dumpdir",
        "gnu-multivolume",
        "gnu-volume-label",
        "gnu-old-long-names",
        "typeflag 0x5a",
      ],
    );
  });

  it("flags an old GNU sparse header whose map goes on in extension blocks", () => {
    assert.equal(
      decodeHeaderBlock(rawHeader({ typeflag: "S", magic: "gnu", poke: { 482: 1 } }), 0).sparseExtended,
      true,
    );
    assert.equal(decodeHeaderBlock(rawHeader({ typeflag: "S", magic: "gnu" }), 0).sparseExtended, false);
    assert.equal(
      decodeHeaderBlock(rawHeader({ typeflag: "0", magic: "gnu", poke: { 482: 1 } }), 0).sparseExtended,
      false,
    );
  });
});

describe("readNumber", () => {
  it("accepts leading spaces and a space or NUL after the digits, and reads an empty field as zero", () => {
    const field = (text: string): Buffer => Buffer.from(text.padEnd(12, "\0"), "latin1");
    assert.equal(readNumber(field("  755 "), 0, 12, "mode"), 0o755);
    assert.equal(readNumber(field("0000644\0junk"), 0, 12, "mode"), 0o644);
    assert.equal(readNumber(field("77777777777"), 0, 12, "size"), 8 * 1024 ** 3 - 1);
    assert.equal(readNumber(field(""), 0, 12, "size"), 0);
  });
});

describe("isZeroBlock", () => {
  it("is true only when all 512 bytes are zero", () => {
    const block = Buffer.alloc(1024);
    assert.equal(isZeroBlock(block, 512), true);
    block[511] = 1;
    assert.equal(isZeroBlock(block, 0), false);
    assert.equal(isZeroBlock(block, 512), true);
  });
});

describe("hasData", () => {
  it("gives no data to links, devices, fifos and directories, and data to everything else", () => {
    for (const type of ["link", "symlink", "character-device", "block-device", "directory", "fifo"])
      assert.equal(hasData(type), false, type);
    for (const type of ["file", "contiguous-file", "gnu-sparse", "gnu-dumpdir", "typeflag 0x5a"])
      assert.equal(hasData(type), true, type);
  });
});

describe("sparseExtensionContinues", () => {
  it("reads the flag in the last used byte of an extension block", () => {
    const block = Buffer.alloc(512);
    assert.equal(sparseExtensionContinues(block, 0), false);
    block[504] = 1;
    assert.equal(sparseExtensionContinues(block, 0), true);
  });
});
