// The executor command's options: wss:// only unless --insecure-mill, --mill-ca's PEM checked, the log store from a directory or s3:// with the AWS variables, checked at the edge.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import {
  readMillCa,
  readMillUrl,
  resolveExecutorCommand,
  type RawExecutorOptions,
} from "../../src/cli/executor-options.js";
import { runCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("executor-options-");
const tokenFile = join(dir, "token");
writeFileSync(tokenFile, "tok-of-sixteen-chars\n");
chmodSync(tokenFile, 0o600);
const RAW: RawExecutorOptions = {
  mill: "wss://spindle.example/mill",
  tokenFile,
  stateDir: join(dir, "state"),
  logStore: join(dir, "logs"),
  maxRuns: "4",
  drainTimeout: "10m",
  outboxMaxBytes: "10Mi",
  podTimeout: "15m",
  maxOutputBytes: "512Mi",
  maxLogBytes: "16Mi",
  maxWarm: "1",
} as RawExecutorOptions;

describe("executor options", () => {
  it("takes wss:// and refuses ws:// unless --insecure-mill, and any other scheme", () => {
    assert.equal(readMillUrl("wss://spindle.example/mill", false), "wss://spindle.example/mill");
    assert.throws(() => readMillUrl("ws://127.0.0.1:1/mill", false), /sends the token in clear/);
    assert.equal(readMillUrl("ws://127.0.0.1:1/mill", true), "ws://127.0.0.1:1/mill");
    assert.throws(() => readMillUrl("https://spindle.example/mill", true), /expects a wss:\/\/ URL/);
  });

  it("takes --mill-ca only as a PEM file of certificates for a wss:// mill, naming what is wrong otherwise", async () => {
    const notPem = join(dir, "not-pem.txt");
    writeFileSync(notPem, "hello\n");
    assert.throws(() => readMillCa(notPem, "wss://m.example/mill"), /holds no PEM certificate/);
    const broken = join(dir, "broken.pem");
    writeFileSync(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert.throws(() => readMillCa(broken, "wss://m.example/mill"), /certificate 1 of .*broken\.pem cannot be read/);
    assert.throws(
      () => readMillCa(join(dir, "absent.pem"), "wss://m.example/mill"),
      /cannot read .*absent\.pem: ENOENT/,
    );
    assert.throws(() => readMillCa(notPem, "ws://127.0.0.1:1/mill"), /--mill-ca is for a wss:\/\/ mill/);
    await assert.rejects(resolveExecutorCommand({ ...RAW, millCa: notPem }, {}), (error: Error) => {
      assert.equal(error.name, "InputError");
      return true;
    });
  });

  it("reads an s3:// log store with the endpoint, region and credentials of the AWS variables, the flags winning", async () => {
    const env = {
      AWS_ENDPOINT_URL: "http://minio:9000",
      AWS_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "secret",
    };
    const config = await resolveExecutorCommand(
      { ...RAW, logStore: "s3://ci-logs/spindle", s3Region: "auto", s3PathStyle: true, labels: "k8s, big,k8s" },
      env,
    );
    assert.deepEqual(config.logStore, {
      kind: "s3",
      bucket: "ci-logs",
      prefix: "spindle/",
      region: "auto",
      endpoint: "http://minio:9000",
      forcePathStyle: true,
      credentials: { accessKeyId: "id", secretAccessKey: "secret" },
    });
    assert.deepEqual(config.labels, ["k8s", "big"]);
    await assert.rejects(resolveExecutorCommand({ ...RAW, logStore: "s3://X" }, {}), /s3:\/\/BUCKET\/PREFIX/);
  });

  it("refuses a --max-runs that is not a whole number from 1 to 1000", async () => {
    await assert.rejects(
      resolveExecutorCommand({ ...RAW, maxRuns: "0" }, {}),
      /--max-runs expects a whole number from 1 to 1000/,
    );
  });

  it("takes --outbox-max-bytes as a size (spindle's 10 MiB by default) and refuses one that is not a size or is under 1Ki", async () => {
    assert.equal((await resolveExecutorCommand(RAW, {})).outboxMaxBytes, 10 * 1024 * 1024);
    assert.equal((await resolveExecutorCommand({ ...RAW, outboxMaxBytes: "64Mi" }, {})).outboxMaxBytes, 64 * 1024 ** 2);
    await assert.rejects(
      resolveExecutorCommand({ ...RAW, outboxMaxBytes: "ten" }, {}),
      (error) =>
        error instanceof InputError &&
        error.message === '--outbox-max-bytes expects a byte count such as 536870912, 512Mi or 1G, got "ten"',
    );
    await assert.rejects(
      resolveExecutorCommand({ ...RAW, outboxMaxBytes: "512" }, {}),
      (error) => error instanceof InputError && /--outbox-max-bytes must be at least 1Ki/.test(error.message),
    );
  });

  it("exits 2 with the reason when executor is given an --outbox-max-bytes that is not a size", async () => {
    const run = await runCli([
      "executor",
      ...["--mill", "wss://spindle.example/mill", "--token-file", tokenFile],
      ...["--state-dir", join(dir, "state"), "--log-store", join(dir, "logs")],
      ...["--outbox-max-bytes", "10MB"],
    ]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /--outbox-max-bytes expects a byte count such as 536870912, 512Mi or 1G, got "10MB"/);
  });
});
