// Tests the installed command itself (bin/knotless-runner-k8s.js, which loads the bundled CLI).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { REPO_ROOT } from "../support/run-cli.js";

const BIN = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");

describe("the knotless-runner-k8s command", () => {
  it("prints run --help and exits 0 from the bundle", async () => {
    const child = spawn(process.execPath, [BIN, "run", "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(code, 0);
    assert.match(stdout, /--checkout <dir>/);
  });

  it("exits 0 without a crash when the reader of its output has gone away (run --help | head)", async () => {
    const child = spawn(process.execPath, [BIN, "run", "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    // Closed before node has even started: the help text meets a pipe with no reader (EPIPE).
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(stderr, "");
    assert.equal(code, 0);
  });

  it("keeps its documented exit code when the reader of its stderr has gone away", async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        "run",
        "--checkout",
        "/nonexistent/checkout",
        "--steps",
        "/nonexistent/steps.tsv",
        "--out",
        "/nonexistent/out",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stderr.destroy(); // the bad-input message meets a pipe with no reader (EPIPE)
    child.stdout.resume();
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(code, 2);
  });

  it("loads none of serve's packages when it starts (the bundle imports them only when serve runs)", () => {
    const bundle = readFileSync(join(REPO_ROOT, "dist", "cli", "knotless-runner-k8s.js"), "utf8");
    const packages = [...bundle.matchAll(/^import .* from "([^"]+)";$/gm)]
      .map((m) => m[1]!)
      .filter((name) => !name.startsWith("node:"));
    for (const heavy of ["better-sqlite3", "ws", "prom-client", "@atproto/lexicon"])
      assert.ok(!packages.includes(heavy), `${heavy} is imported at start-up`);
  });
});
