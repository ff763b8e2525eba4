// The run's cache and artifact settings as the CLI resolves them: flags checked, keys rendered from the real checkout, the dry run's account of them.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderDryRun } from "../../src/cli/dry-run.js";
import { resolveRunCommand, type RawRunOptions } from "../../src/cli/resolve-run-command.js";
import { InputError } from "../../src/core/errors.js";
import { runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const sha256 = (data: string): string => createHash("sha256").update(data).digest("hex");

const WORKFLOW = [
  "caches:",
  `  - key: 'npm-{{ KNOTLESS_REF_NAME }}-{{ hashFiles "package-lock.json" }}'`,
  "    restore-keys:",
  "      - 'npm-{{ KNOTLESS_REF_NAME }}-'",
  "      - npm-",
  "    paths: [node_modules, /root/.npm]",
  "artifacts:",
  "  - name: junit",
  "    paths: /outputs/junit/**/*.xml",
  "    when: failure",
  "steps:",
  "  - name: install",
  "    command: npm ci",
  "",
].join("\n");

function workspace(workflow = WORKFLOW): { dir: string; options: RawRunOptions; lockHash: string } {
  const dir = makeTestTempDir("cache-config-");
  mkdirSync(join(dir, "checkout"));
  writeFileSync(join(dir, "checkout", "package-lock.json"), '{"lockfileVersion":3}');
  writeFileSync(join(dir, "ci.yml"), workflow);
  const lockHash = sha256(`package-lock.json\0${sha256('{"lockfileVersion":3}')}\n`);
  return {
    dir,
    lockHash,
    options: {
      checkout: join(dir, "checkout"),
      workflow: join(dir, "ci.yml"),
      out: join(dir, "out"),
      namespace: "ci",
      event: "push",
      branch: "main",
      repo: "did:plc:abc/app",
    },
  };
}

async function inputError(options: RawRunOptions, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    await resolveRunCommand(options, env);
  } catch (error) {
    assert.ok(error instanceof InputError, String(error));
    return error.message;
  }
  assert.fail("expected an InputError");
}

describe("resolveRunCommand with caches and artifacts", () => {
  it("renders the keys from the checkout's files and the trigger, and keys the default directory store by --repo", async () => {
    const { dir, options, lockHash } = workspace();
    const config = await resolveRunCommand(options, { XDG_CACHE_HOME: join(dir, "xdg") });
    assert.deepEqual(config.settings.caches, [
      { key: `npm-main-${lockHash}`, restoreKeys: ["npm-main-", "npm-"], paths: ["/work/node_modules", "/root/.npm"] },
    ]);
    assert.deepEqual(config.settings.cacheBackend, {
      kind: "dir",
      repo: "did:plc:abc/app",
      dir: join(dir, "xdg", "knotless-runner-k8s"),
      maxBytes: 5 * 1024 ** 3,
    });
    assert.deepEqual(config.settings.artifacts, [
      { name: "junit", paths: ["/outputs/junit/**/*.xml"], when: "failure", required: false },
    ]);
    assert.deepEqual(config.caches, { declared: 1, off: false, repoFrom: "--repo" });
    assert.equal(existsSync(join(dir, "xdg")), false, "resolving creates no directory");
  });

  it("keys the caches by the checkout's absolute path without --repo", async () => {
    const { options } = workspace();
    const { event: _e, branch: _b, repo: _r, ...untriggered } = options;
    const workflow = WORKFLOW.replace(/KNOTLESS_REF_NAME/g, "KNOTLESS_WORKFLOW");
    writeFileSync(options.workflow!, workflow);
    const config = await resolveRunCommand(untriggered, {});
    assert.equal(config.settings.cacheBackend?.repo, `local/${sha256(options.checkout!).slice(0, 12)}`);
    assert.equal(config.caches?.repoFrom, "checkout");
  });

  it("takes --cache-dir, --cache-max-bytes and --cache-pvc, and refuses bad ones before anything else happens", async () => {
    const { dir, options } = workspace();
    const dirConfig = await resolveRunCommand({ ...options, cacheDir: "relative-cache", cacheMaxBytes: "100Mi" }, {});
    assert.deepEqual(dirConfig.settings.cacheBackend, {
      kind: "dir",
      repo: "did:plc:abc/app",
      dir: join(process.cwd(), "relative-cache"),
      maxBytes: 100 * 1024 ** 2,
    });
    const pvcConfig = await resolveRunCommand({ ...options, cachePvc: "ci-cache" }, {});
    assert.deepEqual(pvcConfig.settings.cacheBackend, {
      kind: "pvc",
      repo: "did:plc:abc/app",
      claim: "ci-cache",
      maxBytes: 5 * 1024 ** 3,
    });
    assert.match(
      await inputError({ ...options, cachePvc: "Bad_Name" }),
      /--cache-pvc expects a PersistentVolumeClaim name \(a DNS-1123 label such as ci-cache\), got "Bad_Name"/,
    );
    assert.match(
      await inputError({ ...options, cachePvc: "ci-cache", cacheDir: "/tmp/x" }),
      /--cache-dir and --cache-pvc name two stores: give one of them/,
    );
    assert.match(
      await inputError({ ...options, cacheMaxBytes: "5 GB" }),
      /--cache-max-bytes expects a byte count such as 536870912, 512Mi or 1G, got "5 GB"/,
    );
    assert.match(await inputError({ ...options, cacheMaxBytes: "0" }), /--cache-max-bytes expects more than 0 bytes/);
    writeFileSync(join(dir, "a-file"), "");
    assert.match(
      await inputError({ ...options, cacheDir: join(dir, "a-file") }),
      /--cache-dir: expected a directory, found a file at /,
    );
  });

  it("restores and saves nothing with --no-cache, and still collects the artifacts", async () => {
    const { options } = workspace();
    const config = await resolveRunCommand({ ...options, cache: false }, {});
    assert.equal(config.settings.caches, undefined);
    assert.equal(config.settings.cacheBackend, undefined);
    assert.equal(config.settings.artifacts?.length, 1);
    assert.deepEqual(config.caches, { declared: 1, off: true, repoFrom: "--repo" });
  });

  it("warns, at the key, of a hashFiles pattern that matches nothing", async () => {
    const { options } = workspace(WORKFLOW.replace("package-lock.json", "yarn.lock"));
    const config = await resolveRunCommand(options, {});
    assert.equal(config.settings.caches?.[0]?.key, `npm-main-${sha256("")}`);
    assert.ok(
      config.warnings.includes(
        `${options.workflow}:2:10: warning: caches[0].key: hashFiles "yarn.lock" matched no file in the checkout; it hashes nothing`,
      ),
      config.warnings.join("\n"),
    );
  });

  it("refuses a key that uses a variable the run does not set, as bad input at the key", async () => {
    const { options } = workspace();
    const { event: _e, branch: _b, repo: _r, ...untriggered } = options;
    assert.deepEqual((await inputError(untriggered)).split("\n"), [
      `${options.workflow}:2:10: caches[0].key: the key template ${JSON.stringify(`npm-{{ KNOTLESS_REF_NAME }}-{{ hashFiles "package-lock.json" }}`)} uses {{ KNOTLESS_REF_NAME }}, which this run does not set (set by --ref, --branch or --tag)`,
      `${options.workflow}:4:9: caches[0].restore-keys[0]: the key template "npm-{{ KNOTLESS_REF_NAME }}-" uses {{ KNOTLESS_REF_NAME }}, which this run does not set (set by --ref, --branch or --tag)`,
    ]);
  });

  it("keys a workflow that skips the checkout by the workflow file's path", async () => {
    const { options } = workspace(
      `clone:\n  skip: true\ncaches:\n  - key: 'tools-{{ KNOTLESS_WORKFLOW }}'\n    paths: /opt/tools\nsteps:\n  - name: a\n    command: b\n`,
    );
    const { checkout: _c, repo: _r, event: _e, branch: _b, ...options_ } = options;
    const config = await resolveRunCommand({ ...options_, dryRun: true }, {});
    assert.deepEqual(config.settings.caches, [{ key: "tools-ci.yml", restoreKeys: [], paths: ["/opt/tools"] }]);
    assert.equal(config.settings.cacheBackend?.repo, `local/${sha256(options.workflow!).slice(0, 12)}`);
    assert.equal(config.caches?.repoFrom, "workflow");
  });

  it("hands no cache settings to a run without caches, yet checks the cache flags", async () => {
    const { dir } = workspace();
    writeFileSync(join(dir, "steps.tsv"), "build\tmake\n");
    const options: RawRunOptions = {
      checkout: join(dir, "checkout"),
      steps: join(dir, "steps.tsv"),
      out: join(dir, "out"),
      cachePvc: "ci-cache",
    };
    const config = await resolveRunCommand(options, {});
    assert.deepEqual(
      [config.settings.caches, config.settings.cacheBackend, config.settings.artifacts, config.caches],
      [undefined, undefined, undefined, undefined],
    );
    assert.match(await inputError({ ...options, cachePvc: "-bad" }), /--cache-pvc expects/);
  });
});

describe("the dry run of a workflow with caches and artifacts", () => {
  it("shows each cache's rendered key, fallbacks, paths and store, and each artifact", async () => {
    const { dir, options, lockHash } = workspace();
    const text = await renderDryRun(
      await resolveRunCommand({ ...options, dryRun: true, cacheDir: join(dir, "store") }, {}),
    );
    const lines = text.split("\n");
    assert.ok(
      lines.includes(
        `#   caches: 1 cache in the directory ${join(dir, "store")} on this host, at most 5Gi; repository did:plc:abc/app (--repo)`,
      ),
      text,
    );
    assert.ok(
      lines.includes(
        `#   cache 1: key "npm-main-${lockHash}"; fallback prefixes "npm-main-", "npm-"; paths /work/node_modules, /root/.npm`,
      ),
      text,
    );
    assert.ok(
      lines.includes(
        "#   artifact 1: junit (into artifacts/junit/): /outputs/junit/**/*.xml; when failure; matching nothing is a warning",
      ),
      text,
    );
  });

  it("says where the repository key came from without --repo, names the claim of --cache-pvc, and says caches are off with --no-cache", async () => {
    const { options } = workspace(WORKFLOW.replace(/KNOTLESS_REF_NAME/g, "KNOTLESS_WORKFLOW"));
    const { repo: _r, ...noRepo } = options;
    const pvc = await renderDryRun(
      await resolveRunCommand({ ...noRepo, dryRun: true, cachePvc: "ci-cache", cacheMaxBytes: "1Gi" }, {}),
    );
    assert.match(
      pvc,
      new RegExp(
        `#   caches: 1 cache in the PersistentVolumeClaim ci-cache, mounted into the pod, at most 1Gi; repository local/${sha256(options.checkout!).slice(0, 12)} \\(no --repo: from the checkout's absolute path\\)\n`,
      ),
    );
    const off = await renderDryRun(await resolveRunCommand({ ...options, dryRun: true, cache: false }, {}));
    assert.match(off, /# {3}caches: off \(--no-cache\): the workflow's 1 cache are neither restored nor saved\n/);
    assert.doesNotMatch(off, /# {3}cache 1:/);
  });
});

describe("run with a bad cache input", () => {
  it("exits 2 without calling kubectl", async () => {
    const { dir, options } = workspace();
    const marker = join(dir, "kubectl-called");
    const kubectl = join(dir, "kubectl");
    writeFileSync(kubectl, `#!/bin/sh\ntouch ${marker}\nexit 1\n`, { mode: 0o755 });
    const args = [
      "run",
      "--workflow",
      options.workflow!,
      "--checkout",
      options.checkout!,
      "--out",
      options.out!,
      "--namespace",
      "ci",
      "--transport",
      "kubectl",
      "--kubectl",
      kubectl,
    ];
    const cases: Array<[string[], RegExp]> = [
      [["--cache-pvc", "NOPE"], /--cache-pvc expects a PersistentVolumeClaim name/],
      [["--cache-max-bytes", "lots"], /--cache-max-bytes expects a byte count/],
      [[], /caches\[0\]\.key: .* uses \{\{ KNOTLESS_REF_NAME \}\}, which this run does not set/],
    ];
    for (const [extra, message] of cases) {
      const run = await runCliInProcess([...args, ...extra]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.equal(existsSync(marker), false);
    }
  });
});
