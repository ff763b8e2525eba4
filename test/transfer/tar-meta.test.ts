// Tests the decoding of PAX extended records and GNU long names.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decodeLongName, parsePaxRecords, readPaxOverrides } from "../../src/transfer/tar-meta.js";
import { paxBody } from "./tar-fixtures.js";

describe("parsePaxRecords", () => {
  it("reads every record, with values holding '=', newlines and multi-byte characters", () => {
    const body = paxBody({
      path: "./a=b\nc/日本語.txt",
      linkpath: "x",
      "SCHILY.xattr.user.k": "v=1",
      mtime: "1700000000.5",
    });
    assert.deepEqual(
      [...parsePaxRecords(body)],
      [
        ["path", "./a=b\nc/日本語.txt"],
        ["linkpath", "x"],
        ["SCHILY.xattr.user.k", "v=1"],
        ["mtime", "1700000000.5"],
      ],
    );
  });

  it("keeps the last of a repeated key", () => {
    const body = Buffer.concat([paxBody({ path: "first" }), paxBody({ path: "second" })]);
    assert.equal(parsePaxRecords(body).get("path"), "second");
  });

  it("allows NUL padding after the last record", () => {
    assert.equal(parsePaxRecords(Buffer.concat([paxBody({ size: "12" }), Buffer.alloc(20)])).get("size"), "12");
  });

  it("rejects a record whose length is wrong, missing, or runs past the body", () => {
    assert.throws(() => parsePaxRecords(Buffer.from("11 path=abc\n")), /malformed record at byte 0/);
    assert.throws(() => parsePaxRecords(Buffer.from("path=abc\n")), /malformed record/);
    assert.throws(() => parsePaxRecords(Buffer.from("99 path=abc\n")), /malformed record/);
  });

  it("rejects a record without '=' or a key, and data after NUL padding", () => {
    assert.throws(() => parsePaxRecords(Buffer.from("9 pathab\n")), /malformed record/);
    assert.throws(() => parsePaxRecords(Buffer.from("7 =abc\n")), /malformed record/);
    assert.throws(
      () => parsePaxRecords(Buffer.concat([paxBody({ a: "b" }), Buffer.from("\0\0x")])),
      /malformed record at byte 6/,
    );
  });
});

describe("readPaxOverrides", () => {
  it("takes path, linkpath, size and a fractional mtime", () => {
    const records = new Map([
      ["path", "./p"],
      ["linkpath", "./l"],
      ["size", "8589934592"],
      ["mtime", "1700000000.123456789"],
      ["uid", "0"],
    ]);
    assert.deepEqual(readPaxOverrides(records), {
      sparse: false,
      path: "./p",
      linkpath: "./l",
      size: 8_589_934_592,
      // eslint-disable-next-line no-loss-of-precision -- the pax record's digits, parsed as a double
      mtime: 1_700_000_000.123456789,
    });
  });

  it("ignores empty values, which mean the header field applies", () => {
    assert.deepEqual(
      readPaxOverrides(
        new Map([
          ["path", ""],
          ["size", ""],
        ]),
      ),
      { sparse: false },
    );
  });

  it("accepts a negative mtime", () => {
    assert.equal(readPaxOverrides(new Map([["mtime", "-86400.25"]])).mtime, -86_400.25);
  });

  it("marks a GNU sparse member and takes its real name from GNU.sparse.name", () => {
    const records = new Map([
      ["path", "./GNUSparseFile.12/big"],
      ["GNU.sparse.major", "1"],
      ["GNU.sparse.name", "./big"],
    ]);
    assert.deepEqual(readPaxOverrides(records), { sparse: true, path: "./big" });
  });

  it("rejects a size or mtime that is not a number", () => {
    assert.throws(() => readPaxOverrides(new Map([["size", "12k"]])), /Invalid PAX header: size "12k"/);
    assert.throws(() => readPaxOverrides(new Map([["size", "-1"]])), /Invalid PAX header: size/);
    assert.throws(() => readPaxOverrides(new Map([["mtime", "yesterday"]])), /Invalid PAX header: mtime/);
  });
});

describe("decodeLongName", () => {
  it("reads UTF-8 up to the first NUL, or the whole body without one", () => {
    assert.equal(decodeLongName(Buffer.from("./été/long\0\0garbage")), "./été/long");
    assert.equal(decodeLongName(Buffer.from("./no-nul")), "./no-nul");
  });
});
