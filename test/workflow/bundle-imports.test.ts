// Guards the CLI's start-up: the workflow code must not put yaml or picomatch into every command's loading.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "../support/run-cli.js";

describe("the bundled CLI", () => {
  it("imports yaml and picomatch only when a command needs them, never at start-up", () => {
    const bundle = readFileSync(join(REPO_ROOT, "dist", "cli", "knotless-runner-k8s.js"), "utf8");
    const staticImports = [...bundle.matchAll(/^import\s[^;]*?from\s+"([^"]+)"/gm)].map((match) => match[1]);
    assert.ok(staticImports.length > 0, "expected the bundle's node: imports to be found");
    assert.deepEqual(
      staticImports.filter((name) => name === "yaml" || name === "picomatch"),
      [],
    );
    assert.match(bundle, /parseWorkflowWith\(await import\("yaml"\)/);
  });
});
