// The S3 log store: one PutObject per finished log (@aws-sdk/client-s3), keyed by its ref `<prefix>logs/<lease_id>.log`.
import { readFile } from "node:fs/promises";
import { buildLogRef, hashLogFile, type LogStore, type LogStoreSetting } from "./log-store.js";

/** The store; the log is read whole (a run's log is bounded by --max-log-bytes) and sent with its SHA-256 for the server to check. */
export async function createS3LogStore(setting: Extract<LogStoreSetting, { kind: "s3" }>): Promise<LogStore> {
  // The SDK loads only for an S3 store: ~290 ms of CPU every other command would pay.
  const { PutObjectCommand, S3Client } = await import("@aws-sdk/client-s3");
  const client = new S3Client({
    region: setting.region,
    ...(setting.endpoint ? { endpoint: setting.endpoint } : {}),
    ...(setting.forcePathStyle ? { forcePathStyle: true } : {}),
    ...(setting.credentials ? { credentials: setting.credentials } : {}),
    // S3-compatible servers (MinIO, s3rver, Garage) do not all take the SDK's newer default checksums.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  return {
    describe: `s3://${setting.bucket}/${setting.prefix}`,
    async put(leaseId, path) {
      const ref = buildLogRef(leaseId, setting.prefix);
      const body = await readFile(path);
      const hash = await hashLogFile(path);
      await client.send(
        new PutObjectCommand({ Bucket: setting.bucket, Key: ref, Body: body, ContentType: "application/x-ndjson" }),
      );
      return { ref, hash };
    },
  };
}
