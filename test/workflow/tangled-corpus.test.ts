// The corpus of real Tangled workflow files (test/fixtures/tangled-corpus): each validates and plans to its golden, or is refused as it should be.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import { prepareWorkflowRun } from "../../src/settings/prepare-workflow-run.js";
import { loadWorkflowFile } from "../../src/settings/load-workflow.js";
import { validateWorkflowPaths } from "../../src/settings/validate-files.js";
import { ForeignWorkflowError, WorkflowError } from "../../src/workflow/workflow-errors.js";
import { REPO_ROOT, runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const CORPUS = join(REPO_ROOT, "test", "fixtures", "tangled-corpus");
const GOLDEN = join(CORPUS, "golden");
/** Files for other CI systems, and the system each is for. */
const FOREIGN: Readonly<Record<string, string>> = {
  "mitchellh__go-libghostty__test.yml": "tack",
  "malpercio-dev__ezpds__ci.yaml": "github-actions",
};
/** Files that are Tangled workflows with mistakes in them. */
const BROKEN = ["noClaps__blog__deploy.yml"];
/** The runner configuration the corpus is planned with: the defaults, privileged containers allowed (virtualisation.docker). */
const RUNNER = { config: { ...DEFAULT_RUNNER_CONFIG, allowPrivileged: true }, file: "corpus.yml" };

const files = readdirSync(CORPUS)
  .filter((name) => /\.ya?ml$/.test(name))
  .sort();
const tangled = files.filter((name) => !(name in FOREIGN) && !BROKEN.includes(name));

/** Compares with the checked-in golden plan; UPDATE_GOLDEN=1 rewrites it. */
function assertGolden(name: string, value: unknown): void {
  const path = join(GOLDEN, `${name}.json`);
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(path, text);
  }
  assert.equal(
    text,
    readFileSync(path, "utf8"),
    `${name} plans differently from golden/${name}.json (UPDATE_GOLDEN=1 to accept)`,
  );
}

describe("the corpus of real Tangled workflow files", () => {
  it("holds at least 25 Tangled-engine files from at least 15 repositories, each listed with its source in the README", () => {
    const readme = readFileSync(join(CORPUS, "README.md"), "utf8");
    for (const name of files)
      assert.match(
        readme,
        new RegExp(
          `\\| \`${name.replaceAll(".", "\\.")}\` \\| \\[[^\\]]+\\]\\(https://github\\.com/[^)]+\\) \\| \`\\.tangled/workflows/[^\`]+\` \\| \`[0-9a-f]{40}\` \\|`,
        ),
      );
    assert.ok(tangled.length >= 25, `${tangled.length} Tangled-engine files`);
    assert.ok(new Set(tangled.map((name) => name.split("__").slice(0, 2).join("/"))).size >= 15);
    const engines = new Set(
      tangled.map((name) => /^engine:\s*["']?(\w+)/m.exec(readFileSync(join(CORPUS, name), "utf8"))?.[1] ?? "none"),
    );
    assert.deepEqual([...engines].sort(), ["kubernetes", "microvm", "nixery", "none"]);
  });

  it("validates every Tangled-engine file, reports the other systems' files as such and the broken one's errors", async () => {
    const report = await validateWorkflowPaths(files.map((name) => join(CORPUS, name)));
    for (const check of report.checks) {
      const name = check.file.split("/").pop()!;
      if (name in FOREIGN) assert.equal(check.foreign?.system, FOREIGN[name], name);
      else if (BROKEN.includes(name)) assert.ok(check.errors.length > 0 && check.foreign === undefined, name);
      else assert.deepEqual([check.errors, check.foreign], [[], undefined], name);
    }
  });

  for (const name of tangled) {
    it(`plans ${name} as its golden says`, async () => {
      const loaded = await loadWorkflowFile(join(CORPUS, name), { name, nixeryBase: "nixery.dev", runner: RUNNER });
      const { plan } = await prepareWorkflowRun(loaded, { runId: "corpus" });
      assertGolden(name, plan);
    });
  }

  for (const [name, system] of Object.entries(FOREIGN)) {
    it(`refuses to run ${name} as a workflow for another system (${system}), not as a broken file`, async () => {
      await assert.rejects(
        loadWorkflowFile(join(CORPUS, name), { name }),
        (error: unknown) =>
          error instanceof ForeignWorkflowError && error.system === system && /it is not run here$/.test(error.message),
      );
    });
  }

  it("refuses the broken file as a broken one", async () => {
    await assert.rejects(
      loadWorkflowFile(join(CORPUS, BROKEN[0]!), { name: BROKEN[0]! }),
      (error: unknown) => error instanceof WorkflowError && !(error instanceof ForeignWorkflowError),
    );
  });

  it("dry-runs every Tangled-engine file through the CLI (exit 0), and validate exits 0 for the corpus without the broken file", async () => {
    const dir = makeTestTempDir("knotless-corpus-");
    writeFileSync(join(dir, "ops.yml"), "allowPrivileged: true\n");
    mkdirSync(join(dir, "checkout"));
    for (const name of tangled) {
      const run = await runCliInProcess([
        "run",
        "--workflow",
        join(CORPUS, name),
        "--checkout",
        join(dir, "checkout"),
        "--out",
        join(dir, "out", name),
        "--nixery",
        "nixery.dev",
        "--config",
        join(dir, "ops.yml"),
        "--namespace",
        "ci",
        "--dry-run",
      ]);
      assert.equal(run.code, 0, `${name}: ${run.stderr}`);
      assert.match(run.stdout, /^# Job manifest$/m);
    }
    const validate = await runCliInProcess([
      "validate",
      ...files.filter((name) => !BROKEN.includes(name)).map((name) => join(CORPUS, name)),
    ]);
    assert.equal(validate.code, 0, validate.stderr);
    assert.equal(validate.stdout.split("\n").filter((line) => line.startsWith("other  ")).length, 2);
  });

  it("refuses to run a file for another system with exit 2 and its own message", async () => {
    const dir = makeTestTempDir("knotless-corpus-");
    mkdirSync(join(dir, "checkout"));
    const run = await runCliInProcess([
      "run",
      "--workflow",
      join(CORPUS, "mitchellh__go-libghostty__test.yml"),
      "--checkout",
      join(dir, "checkout"),
      "--out",
      join(dir, "out"),
      "--namespace",
      "ci",
      "--dry-run",
    ]);
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /mitchellh__go-libghostty__test\.yml:7:9: engine: this workflow is for another engine \(engine: tack\), not one this runner runs \(kubernetes, nixery, microvm\); it is not run here/,
    );
  });
});
