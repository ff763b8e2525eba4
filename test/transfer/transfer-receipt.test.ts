import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  buildUploadReceipt,
  checkOutputsCount,
  checkUploadReply,
  expectedFindLines,
  parseOutputsCount,
  parseUploadReply,
} from "../../src/transfer/transfer-receipt.js";

const receipt = buildUploadReceipt("0123abcd", 12, 40960);

describe("the upload receipt", () => {
  it("is one line naming the nonce, the entry count and the byte offset", () => {
    assert.equal(receipt, "knotless-upload 0123abcd entries=12 bytes=40960\n");
  });

  it("is accepted when the pod prints it back followed by the expected find count", () => {
    assert.equal(checkUploadReply({ receipt, findLines: 15 }, `${receipt}15\n`), undefined);
  });

  it("is accepted when wc pads the count with spaces, as some wc implementations do", () => {
    assert.equal(checkUploadReply({ receipt, findLines: 15 }, `${receipt}      15\n`), undefined);
  });

  it("is refused when the pod has no receipt (the stream lost its last entry)", () => {
    const problem = checkUploadReply({ receipt, findLines: 15 }, "");
    assert.match(problem ?? "", /last entry did not arrive intact.*no receipt/);
  });

  it("is refused when the pod has the receipt of another attempt", () => {
    const stale = buildUploadReceipt("ffff0000", 12, 40960);
    assert.match(
      checkUploadReply({ receipt, findLines: 15 }, `${stale}15\n`) ?? "",
      /expected receipt .*0123abcd.*ffff0000/,
    );
  });

  it("is refused when the pod's find counts fewer entries (whole entries lost in the middle)", () => {
    assert.match(
      checkUploadReply({ receipt, findLines: 15 }, `${receipt}14\n`) ?? "",
      /has 14 lines from find .* expected 15/,
    );
  });

  it("is refused when the count is missing", () => {
    assert.match(checkUploadReply({ receipt, findLines: 15 }, receipt) ?? "", /has no count/);
  });

  it("splits a reply into receipt line and count", () => {
    assert.deepEqual(parseUploadReply(`${receipt}7\n`), { receipt, findLines: 7 });
    assert.deepEqual(parseUploadReply("garbage"), { receipt: "garbage", findLines: undefined });
  });
});

describe("the expected find count", () => {
  it("counts every member, the extra lines of names with newlines, and each mount point itself", () => {
    assert.equal(
      expectedFindLines([
        { entries: 10, nameNewlines: 2 },
        { entries: 0, nameNewlines: 0 },
      ]),
      10 + 2 + 1 + 1,
    );
  });

  it("matches what find | wc -l prints for a real tree with a newline in a name", () => {
    const root = mkdtempSync(join(tmpdir(), "receipt-find-"));
    try {
      mkdirSync(join(root, "a/b"), { recursive: true });
      writeFileSync(join(root, "a/b/file"), "x");
      writeFileSync(join(root, "two\nlines"), "y");
      symlinkSync("a/b/file", join(root, "link"));
      // Members: a/, a/b/, a/b/file, "two\nlines", link.
      const printed = Number(execFileSync("sh", ["-c", 'find "$1" | wc -l', "sh", root], { encoding: "utf8" }).trim());
      assert.equal(printed, expectedFindLines([{ entries: 5, nameNewlines: 1 }]));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the outputs count", () => {
  it("is read from the pod's stderr among other lines", () => {
    assert.equal(parseOutputsCount("tar: something\nknotless-outputs-entries 42\n"), 42);
    assert.equal(parseOutputsCount("knotless-outputs-entries \n"), undefined);
  });

  it("matches an archive whose members, root included, are what find printed", () => {
    assert.equal(checkOutputsCount({ entries: 4, nameNewlines: 1 }, "knotless-outputs-entries 5\n"), undefined);
  });

  it("is refused when the archive has fewer members than the pod's find printed", () => {
    assert.match(
      checkOutputsCount({ entries: 3, nameNewlines: 0 }, "knotless-outputs-entries 5\n") ?? "",
      /archive had 3 entries .* printed 5/,
    );
  });

  it("is refused when the pod reported no count", () => {
    assert.match(checkOutputsCount({ entries: 3, nameNewlines: 0 }, "") ?? "", /did not report/);
  });
});
