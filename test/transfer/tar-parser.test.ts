// Tests the push tar parser: meta headers, bodies, chunking, the end of the archive and truncation.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_META_BYTES, MAX_META_HEADERS, MAX_TRAILER_BYTES, TarParser } from "../../src/transfer/tar-parser.js";
import type { TarMember, TarTruncation } from "../../src/transfer/tar-parser.js";
import { TarFormatError } from "../../src/transfer/tar-header.js";
import { base256, endOfArchive, paxBody, rawEntry, rawHeader, randomChunks } from "./tar-fixtures.js";

interface ParsedMember {
  readonly member: TarMember;
  readonly body: string;
}

interface ParseResult {
  readonly members: ParsedMember[];
  readonly ended: boolean;
  readonly truncation: TarTruncation | undefined;
}

/** Feeds `chunks` in order, reading every member and body as soon as the parser can give them. */
function parseChunks(
  chunks: readonly Buffer[],
  read: "take" | "stream" = "take",
  parser = new TarParser(),
): ParseResult {
  const scratch = Buffer.alloc(256 * 1024);
  const members: ParsedMember[] = [];
  let current: { member: TarMember; pieces: Buffer[] } | undefined;
  let ended = false;
  const drain = (): void => {
    for (;;) {
      if (current !== undefined) {
        if (read === "take") {
          const body = parser.takeBody(scratch);
          if (body === undefined) return;
          current.pieces.push(Buffer.from(body));
        } else {
          for (let piece = parser.readBody(); piece !== undefined; piece = parser.readBody())
            current.pieces.push(Buffer.from(piece));
          if (parser.bodyRemaining > 0) return;
        }
        members.push({ member: current.member, body: Buffer.concat(current.pieces).toString("utf8") });
        current = undefined;
      }
      const next = parser.nextMember();
      if (next === undefined) return;
      if (next === "end") {
        ended = true;
        return;
      }
      current = { member: next, pieces: [] };
    }
  };
  for (const chunk of chunks) {
    parser.push(chunk);
    drain();
  }
  return { members, ended, truncation: parser.finish() };
}

const parse = (archive: Buffer): ParseResult => parseChunks([archive]);
const names = (result: ParseResult): string[] => result.members.map((entry) => entry.member.name);

/** An archive touching every path of the parser: meta headers, empty and block-sized bodies, sparse blocks. */
function variedArchive(): Buffer {
  return Buffer.concat([
    rawEntry({ name: "./", typeflag: "5" }),
    rawEntry({ name: "./small.txt", mode: 0o600 }, "small body"),
    rawEntry({ name: "./empty" }, ""),
    rawEntry({ name: "./block", mtime: 1 }, "b".repeat(512)),
    rawEntry(
      { typeflag: "x", name: "./PaxHeaders/x" },
      paxBody({ path: "./pax/é-long-" + "p".repeat(200), mtime: "1700000001.5" }),
    ),
    rawEntry({ name: "./pax/short" }, "pax body"),
    rawEntry({ typeflag: "L", name: "././@LongLink", magic: "gnu" }, `./gnu/${"g".repeat(300)}\0`),
    rawEntry({ typeflag: "K", name: "././@LongLink", magic: "gnu" }, `${"t".repeat(150)}\0`),
    rawEntry({ name: "./gnu/short", typeflag: "2", linkname: "short-target", magic: "gnu" }),
    rawEntry({ typeflag: "g", name: "global" }, paxBody({ comment: "ignored", path: "./ignored-too" })),
    rawEntry({ name: "./multi-block.bin" }, "m".repeat(1500)),
    rawEntry({ name: "./newline\nname" }, "n"),
    endOfArchive(),
    Buffer.alloc(8 * 1024),
  ]);
}

describe("TarParser", () => {
  it("yields each member with its body and ends at the first zero block", () => {
    const result = parse(variedArchive());
    assert.deepEqual(names(result), [
      "./",
      "./small.txt",
      "./empty",
      "./block",
      `./pax/é-long-${"p".repeat(200)}`,
      `./gnu/${"g".repeat(300)}`,
      "./multi-block.bin",
      "./newline\nname",
    ]);
    assert.deepEqual(
      result.members.map((entry) => entry.body.length),
      [0, 10, 0, 512, 8, 0, 1500, 1],
    );
    assert.equal(result.members[1]?.body, "small body");
    assert.equal(result.members[1]?.member.mode, 0o600);
    assert.equal(result.ended, true);
    assert.equal(result.truncation, undefined);
  });

  it("applies a PAX path and mtime to the next member only", () => {
    const result = parse(variedArchive());
    assert.equal(result.members[4]?.member.mtime, 1_700_000_001.5);
    assert.equal(result.members[6]?.member.name, "./multi-block.bin");
    assert.equal(result.members[6]?.member.mtime, 1_700_000_000);
  });

  it("applies GNU long names and long link names, and ignores a global PAX header", () => {
    const symlink = parse(variedArchive()).members[5]?.member;
    assert.deepEqual(symlink, {
      name: `./gnu/${"g".repeat(300)}`,
      linkname: "t".repeat(150),
      type: "symlink",
      mode: 0o644,
      mtime: 1_700_000_000,
      size: 0,
    });
  });

  it("takes the PAX size over the header's and the PAX linkpath over a GNU long link name", () => {
    const archive = Buffer.concat([
      rawEntry({ typeflag: "K", magic: "gnu" }, "gnu-target\0"),
      rawEntry({ typeflag: "x" }, paxBody({ linkpath: "pax-target", path: "./pax-wins" })),
      rawHeader({ name: "./l", typeflag: "2" }),
      rawEntry({ typeflag: "x" }, paxBody({ size: "3" })),
      rawHeader({ name: "./sized", size: 999 }),
      Buffer.from("abc".padEnd(512, "\0")),
      endOfArchive(),
    ]);
    const result = parse(archive);
    assert.deepEqual(
      result.members.map((entry) => [entry.member.name, entry.member.linkname, entry.body]),
      [
        ["./pax-wins", "pax-target", ""],
        ["./sized", "", "abc"],
      ],
    );
  });

  it("gives links, symlinks, devices, fifos and directories no body whatever their size field says", () => {
    const archive = Buffer.concat([
      ...["1", "2", "3", "4", "5", "6"].map((typeflag) => rawHeader({ name: `./t${typeflag}`, typeflag, size: 1000 })),
      rawEntry({ name: "./after" }, "after"),
      endOfArchive(),
    ]);
    const result = parse(archive);
    assert.deepEqual(names(result), ["./t1", "./t2", "./t3", "./t4", "./t5", "./t6", "./after"]);
    assert.deepEqual(
      result.members.map((entry) => entry.member.size),
      [0, 0, 0, 0, 0, 0, 5],
    );
  });

  it("reads a base-256 size in a header", () => {
    const result = parse(
      Buffer.concat([rawHeader({ name: "./b", sizeField: base256(600n) }), Buffer.alloc(1024, 0x61), endOfArchive()]),
    );
    assert.equal(result.members[0]?.body, "a".repeat(600));
  });

  it("skips an old GNU sparse header's extension blocks and gives it exactly its stored bytes", () => {
    const extension = (continues: boolean): Buffer => {
      const block = Buffer.alloc(512, 0x31);
      block[504] = continues ? 1 : 0;
      return block;
    };
    const archive = Buffer.concat([
      rawHeader({ name: "./sparse", typeflag: "S", magic: "gnu", size: 700, poke: { 482: 1 } }),
      extension(true),
      extension(false),
      Buffer.alloc(1024, 0x73),
      rawEntry({ name: "./after", magic: "gnu" }, "after"),
      endOfArchive(),
    ]);
    const result = parse(archive);
    assert.deepEqual(
      result.members.map((entry) => [entry.member.name, entry.member.type, entry.body]),
      [
        ["./sparse", "gnu-sparse", "s".repeat(700)],
        ["./after", "file", "after"],
      ],
    );
  });

  it("marks a member described by GNU.sparse PAX records as gnu-sparse under its real name", () => {
    const archive = Buffer.concat([
      rawEntry(
        { typeflag: "x" },
        paxBody({
          "GNU.sparse.major": "1",
          "GNU.sparse.minor": "0",
          "GNU.sparse.name": "./real",
          "GNU.sparse.realsize": "9999",
        }),
      ),
      rawEntry({ name: "./GNUSparseFile.1/real" }, "1\n0\n3\n"),
      endOfArchive(),
    ]);
    const member = parse(archive).members[0]?.member;
    assert.equal(member?.name, "./real");
    assert.equal(member?.type, "gnu-sparse");
    assert.equal(member?.size, 6);
  });

  it("gives the same members and bodies whether fed whole, one byte at a time or in random chunks", () => {
    const archive = variedArchive();
    const whole = parse(archive);
    const byteByByte = parseChunks([...archive].map((byte) => Buffer.from([byte])));
    assert.deepEqual(byteByByte, whole);
    for (const seed of [1, 2, 3, 42]) {
      assert.deepEqual(parseChunks(randomChunks(archive, seed, 1500)), whole, `take, seed ${seed}`);
      assert.deepEqual(parseChunks(randomChunks(archive, seed, 700), "stream"), whole, `stream, seed ${seed}`);
    }
  });

  it("takes a body in place when it sits in one chunk and in the scratch buffer when it spans chunks", () => {
    const content = "0123456789".repeat(500);
    const archive = Buffer.concat([rawEntry({ name: "./a" }, content), endOfArchive()]);
    const scratch = Buffer.alloc(8192);
    const inOne = new TarParser();
    inOne.push(archive);
    inOne.nextMember();
    assert.equal(inOne.takeBody(scratch)?.buffer, archive.buffer);
    const split = new TarParser();
    split.push(archive.subarray(0, 512 + 4096));
    split.push(archive.subarray(512 + 4096));
    split.nextMember();
    const body = split.takeBody(scratch);
    assert.equal(body?.buffer, scratch.buffer);
    assert.equal(body?.toString(), content);
  });

  it("gathers chunks under 4 KiB so that a trickling source yields pieces of useful size", () => {
    const archive = Buffer.concat([rawEntry({ name: "./a" }, "x".repeat(3000)), endOfArchive()]);
    const parser = new TarParser();
    for (let index = 0; index < 512 + 3000; index += 1) parser.push(archive.subarray(index, index + 1));
    parser.nextMember();
    const piece = parser.readBody();
    assert.equal(piece?.length, 3000);
    assert.notEqual(piece?.buffer, archive.buffer);
  });

  describe("with a release callback", () => {
    /** Copies of `chunks` that the parser gives back through release, each scribbled over at once as a reused buffer would be. */
    function parseRecycled(
      chunks: readonly Buffer[],
      read: "take" | "stream",
    ): { result: ParseResult; released: Map<Buffer, number>; copies: Buffer[] } {
      const released = new Map<Buffer, number>();
      const parser = new TarParser({
        release: (chunk) => {
          released.set(chunk, (released.get(chunk) ?? 0) + 1);
          chunk.fill(0xee);
        },
      });
      const copies = chunks.map((chunk) => Buffer.from(chunk));
      return { result: parseChunks(copies, read, parser), released, copies };
    }

    it("gives every chunk back exactly once, and never one whose bytes it still needs", () => {
      const archive = Buffer.concat([
        variedArchive().subarray(0, -(8 * 1024 + 1024)),
        rawEntry({ name: "./big.bin" }, "B".repeat(70_000)),
        endOfArchive(),
        endOfArchive(),
      ]);
      const whole = parse(archive);
      assert.equal(whole.members.at(-1)?.body.length, 70_000);
      for (const seed of [1, 2, 3, 42]) {
        for (const read of ["take", "stream"] as const) {
          const { result, released, copies } = parseRecycled(randomChunks(archive, seed, 9000), read);
          assert.deepEqual(result, whole, `${read}, seed ${seed}: scribbled-over chunks changed what was parsed`);
          assert.deepEqual(
            copies.filter((copy) => released.get(copy) !== 1),
            [],
            `${read}, seed ${seed}: chunks not given back exactly once`,
          );
        }
      }
    });

    it("keeps the chunk under a body piece until the next call on the parser", () => {
      const archive = Buffer.concat([rawEntry({ name: "./a" }, "x".repeat(8192)), endOfArchive()]);
      const released: Buffer[] = [];
      const parser = new TarParser({ release: (chunk) => released.push(chunk) });
      const first = Buffer.from(archive.subarray(0, 512 + 8192));
      parser.push(first);
      parser.nextMember();
      const piece = parser.readBody();
      assert.equal(piece?.buffer, first.buffer);
      assert.equal(parser.bodyRemaining, 0);
      assert.deepEqual(released, [], "released while the caller still holds a view of it");
      parser.push(Buffer.from(archive.subarray(512 + 8192)));
      assert.equal(released[0], first);
    });
  });

  it("refuses to read the next member before the current body is consumed", () => {
    const parser = new TarParser();
    parser.push(Buffer.concat([rawEntry({ name: "./a" }, "abc"), endOfArchive()]));
    parser.nextMember();
    assert.throws(() => parser.nextMember(), /before the current body was consumed/);
    assert.equal(parser.skipBody(), true);
    assert.equal(parser.nextMember(), "end");
  });

  describe("at and after the end of the archive", () => {
    it("accepts a single zero block as the end, like GNU tar", () => {
      const result = parse(Buffer.concat([rawEntry({ name: "./a" }, "a"), Buffer.alloc(512)]));
      assert.equal(result.ended, true);
      assert.equal(result.truncation, undefined);
    });

    it("accepts zero padding after the end and rejects any other byte there", () => {
      const padding = Buffer.alloc(10_240);
      assert.equal(
        parse(Buffer.concat([rawEntry({ name: "./a" }, "a"), endOfArchive(), padding])).truncation,
        undefined,
      );
      padding[9000] = 1;
      assert.throws(
        () => parse(Buffer.concat([rawEntry({ name: "./a" }, "a"), endOfArchive(), padding])),
        /data after the end-of-archive block/,
      );
    });

    it("rejects a member after a lone zero block", () => {
      assert.throws(
        () =>
          parse(
            Buffer.concat([
              rawEntry({ name: "./a" }, "a"),
              Buffer.alloc(512),
              rawEntry({ name: "./b" }, "b"),
              endOfArchive(),
            ]),
          ),
        TarFormatError,
      );
    });

    it("rejects more than MAX_TRAILER_BYTES of padding after the end", () => {
      const chunks = [
        rawEntry({ name: "./a" }, "a"),
        ...Array.from({ length: MAX_TRAILER_BYTES / 65_536 + 1 }, () => Buffer.alloc(65_536)),
      ];
      assert.throws(() => parseChunks(chunks), /more than 1048576 bytes after the end-of-archive block/);
    });
  });

  describe("concatenated archives (xargs tar -c)", () => {
    const concatenated = (): TarParser => new TarParser({ concatenated: true });
    const two = (): Buffer =>
      Buffer.concat([
        rawEntry({ name: "./a" }, "a"),
        endOfArchive(),
        rawEntry({ name: "./b" }, "bb"),
        endOfArchive(),
        Buffer.alloc(10_240),
      ]);

    it("reads every member of archives that follow one another, and takes the stream as whole when it ends on zero blocks", () => {
      const whole = parseChunks([two()], "take", concatenated());
      assert.deepEqual(
        whole.members.map((entry) => [entry.member.name, entry.body]),
        [
          ["./a", "a"],
          ["./b", "bb"],
        ],
      );
      assert.equal(whole.truncation, undefined);
      const bytes = two();
      const trickled = parseChunks(
        Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1)),
        "stream",
        concatenated(),
      );
      assert.deepEqual(names(trickled), ["./a", "./b"]);
      assert.equal(trickled.truncation, undefined);
    });

    it("still refuses the same stream without the option", () => {
      assert.throws(() => parse(two()), TarFormatError);
    });

    it("says a stream cut after a member, before any zero block, lacks its end-of-archive block", () => {
      const cut = Buffer.concat([rawEntry({ name: "./a" }, "a"), endOfArchive(), rawEntry({ name: "./b" }, "b")]);
      assert.deepEqual(parseChunks([cut], "take", concatenated()).truncation, {
        detail: "it ends without an end-of-archive block",
        inside: false,
      });
    });

    it("rejects a header with a bad checksum after the zeros, and a partial block that is not zeros at the very end", () => {
      assert.throws(
        () =>
          parseChunks(
            [
              Buffer.concat([
                rawEntry({ name: "./a" }, "a"),
                endOfArchive(),
                rawEntry({ name: "./b", checksum: 12 }, "b"),
              ]),
            ],
            "take",
            concatenated(),
          ),
        /checksum/,
      );
      assert.throws(
        () =>
          parseChunks(
            [Buffer.concat([rawEntry({ name: "./a" }, "a"), endOfArchive(), Buffer.from([0, 0, 1])])],
            "take",
            concatenated(),
          ),
        /data after the end-of-archive block/,
      );
    });

    it("rejects more than MAX_TRAILER_BYTES of zeros in a row", () => {
      const chunks = [
        rawEntry({ name: "./a" }, "a"),
        ...Array.from({ length: MAX_TRAILER_BYTES / 65_536 + 1 }, () => Buffer.alloc(65_536)),
      ];
      assert.throws(() => parseChunks(chunks, "take", concatenated()), /more than 1048576 zero bytes in a row/);
    });
  });

  describe("corrupt archives", () => {
    it("rejects a header with a bad checksum and says where it is", () => {
      const archive = Buffer.concat([
        rawEntry({ name: "./a" }, "a"),
        rawEntry({ name: "./b", checksum: 12 }, "b"),
        endOfArchive(),
      ]);
      assert.throws(
        () => parse(archive),
        /^TarFormatError: Invalid tar header: its checksum field says 14 but the block sums to \d+ \(block at byte 1024\)$/,
      );
    });

    it("rejects an extended header that no member follows", () => {
      const archive = Buffer.concat([rawEntry({ typeflag: "L", magic: "gnu" }, "./orphan\0"), endOfArchive()]);
      assert.throws(() => parse(archive), /an extended header is not followed by an entry/);
    });

    it("rejects a meta header larger than MAX_META_BYTES before buffering it", () => {
      const parser = new TarParser();
      parser.push(rawHeader({ typeflag: "x", size: MAX_META_BYTES + 1 }));
      assert.throws(() => parser.nextMember(), /a pax-header header of 1048577 bytes/);
    });

    it("rejects more than MAX_META_HEADERS meta headers in a row", () => {
      const metas = Array.from({ length: MAX_META_HEADERS + 1 }, () =>
        rawEntry({ typeflag: "L", magic: "gnu" }, "./n\0"),
      );
      assert.throws(
        () => parse(Buffer.concat([...metas, rawEntry({ name: "./a" }, "a"), endOfArchive()])),
        /more than 16 extended headers in a row/,
      );
    });

    it("rejects a malformed PAX record", () => {
      const archive = Buffer.concat([
        rawEntry({ typeflag: "x" }, "5 path=x\n"),
        rawEntry({ name: "./a" }, "a"),
        endOfArchive(),
      ]);
      assert.throws(() => parse(archive), /Invalid PAX header: malformed record/);
    });
  });

  describe("finish", () => {
    const archive = Buffer.concat([
      rawEntry({ name: "./a" }, "a"),
      rawEntry({ typeflag: "x" }, paxBody({ path: "./long" })),
      rawEntry({ name: "./b" }, "b".repeat(600)),
      endOfArchive(),
    ]);
    const cutAt = (length: number): TarTruncation | undefined => parse(archive.subarray(0, length)).truncation;

    it("says an empty stream is empty", () => {
      assert.deepEqual(cutAt(0), { detail: "it is empty", inside: false });
    });

    it("says a stream cut between members lacks its end-of-archive block", () => {
      assert.deepEqual(cutAt(1024), { detail: "it ends without an end-of-archive block", inside: false });
    });

    it("says where a stream was cut inside a header, an extended header, a body or its padding", () => {
      assert.deepEqual(cutAt(1024 + 100), { detail: "it ends inside a header block", inside: true });
      assert.deepEqual(cutAt(1536 + 10), { detail: "it ends inside a pax-header header", inside: true });
      assert.deepEqual(cutAt(2560 + 300), { detail: 'it ends inside the content of "./long"', inside: true });
      assert.deepEqual(cutAt(2560 + 700), { detail: 'it ends inside the padding after "./long"', inside: true });
      assert.deepEqual(cutAt(archive.length - 1024 + 100), { detail: "it ends inside a header block", inside: true });
    });

    it("accepts the stream once its end-of-archive block was read", () => {
      assert.equal(cutAt(archive.length - 512), undefined);
    });
  });
});
