// The S3 log store against s3rver (an S3-compatible server in-process): the log stored at its ref under the prefix, the hash that of its bytes, a re-put overwriting.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { LogStoreSetting } from "../../src/mill/log-store.js";
import { openLogStore } from "../../src/mill/open-log-store.js";
import { makeTestTempDir } from "../support/temp-dir.js";

interface S3rverLike {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

describe("S3 log store", () => {
  const dir = makeTestTempDir("s3-log-store-");
  let server: S3rverLike;
  let setting: Extract<LogStoreSetting, { kind: "s3" }>;
  let client: S3Client;

  before(async () => {
    const S3rver = createRequire(import.meta.url)("s3rver") as new (options: Record<string, unknown>) => S3rverLike;
    server = new S3rver({
      port: 0,
      address: "127.0.0.1",
      silent: true,
      directory: join(dir, "s3"),
      configureBuckets: [{ name: "ci-logs" }],
    });
    const address = await server.run();
    const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
    setting = {
      kind: "s3",
      bucket: "ci-logs",
      prefix: "spindle/",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${address.port}`,
      forcePathStyle: true,
      credentials,
    };
    client = new S3Client({
      region: "us-east-1",
      endpoint: setting.endpoint!,
      forcePathStyle: true,
      credentials,
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  });
  after(async () => {
    client?.destroy();
    await server?.close();
  });

  async function readObject(key: string): Promise<Buffer> {
    const answer = await client.send(new GetObjectCommand({ Bucket: "ci-logs", Key: key }));
    return Buffer.from(await answer.Body!.transformToByteArray());
  }

  it("stores a finished log at <prefix>logs/<lease>.log, the ref the mill reads, with the sha256 of its bytes", async () => {
    const store = await openLogStore(setting);
    const path = join(dir, "3abc-1.log");
    const text = '{"kind":"data","content":"hello","time":"2026-12-07T00:00:00Z","step_id":0,"stream":"stdout"}\n';
    writeFileSync(path, text);
    const stored = await store.put("3abc-1", path);
    assert.equal(stored.ref, "spindle/logs/3abc-1.log");
    assert.equal(stored.hash, `sha256:${createHash("sha256").update(text).digest("hex")}`);
    assert.equal((await readObject(stored.ref)).toString(), text);
  });

  it("overwrites the object when a log is stored again (a restart's retry of an interrupted upload)", async () => {
    const store = await openLogStore(setting);
    const path = join(dir, "3abc-2.log");
    writeFileSync(path, "first\n");
    await store.put("3abc-2", path);
    writeFileSync(path, "first\nsecond\n");
    const again = await store.put("3abc-2", path);
    assert.equal((await readObject(again.ref)).toString(), "first\nsecond\n");
  });

  it("rejects when the bucket does not exist, so the session keeps the terminal back and tries again", async () => {
    const store = await openLogStore({ ...setting, bucket: "no-such-bucket" });
    const path = join(dir, "3abc-3.log");
    writeFileSync(path, "x\n");
    await assert.rejects(store.put("3abc-3", path), /bucket/i);
  });
});
