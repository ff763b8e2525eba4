import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseRunnerConfig, readRunnerConfig } from "../../src/config/read-runner-config.js";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("the runner configuration file", () => {
  it("adds images to the defaults, short form without Nix, and sets the runtime class, the default image and privileged containers", async () => {
    const config = await parseRunnerConfig("engines:\n  microvm:\n    defaultImage: debian\n    runtimeClassName: kata\n    images:\n      debian: debian:bookworm-slim\n      nixos: {image: nixos/nix:2.30.0, nix: true}\nallowPrivileged: true\ndocker: {image: docker:27-dind}\n", "ops.yml");
    assert.deepEqual(config, {
      engines: {
        microvm: {
          images: { ...DEFAULT_RUNNER_CONFIG.engines.microvm.images, debian: { image: "debian:bookworm-slim", nix: false }, nixos: { image: "nixos/nix:2.30.0", nix: true } },
          defaultImage: "debian",
          runtimeClassName: "kata",
        },
      },
      allowPrivileged: true,
      docker: { image: "docker:27-dind" },
    });
  });

  it("is the defaults when empty or absent", async () => {
    assert.deepEqual(await parseRunnerConfig("", "ops.yml"), DEFAULT_RUNNER_CONFIG);
    assert.deepEqual(await readRunnerConfig(undefined), { config: DEFAULT_RUNNER_CONFIG });
  });

  it("reports every problem at its file:line:column", async () => {
    await assert.rejects(parseRunnerConfig("engines:\n  microvm:\n    defaultImage: ubuntu\n    runtimeClassName: Kata_1\nallowPrivilege: true\n", "ops.yml"), (error: unknown) => {
      assert.ok(error instanceof WorkflowError);
      assert.equal(
        error.message,
        [
          'ops.yml:3:19: engines.microvm.defaultImage: "ubuntu" is not one of the images: nixos, alpine, almalinux10',
          'ops.yml:4:23: engines.microvm.runtimeClassName: expected a RuntimeClass name such as kata or gvisor, found "Kata_1"',
          "ops.yml:5:1: allowPrivilege: unknown key; did you mean `allowPrivileged`?",
        ].join("\n"),
      );
      return true;
    });
  });

  it("reads a file with the workflow files' bounds, and names the file it came from", async () => {
    const dir = makeTestTempDir("knotless-config-");
    writeFileSync(join(dir, "ops.yml"), "allowPrivileged: true\n");
    const source = await readRunnerConfig(join(dir, "ops.yml"));
    assert.equal(source.config.allowPrivileged, true);
    assert.equal(source.file, join(dir, "ops.yml"));
    await assert.rejects(readRunnerConfig("/dev/zero"), /^InputError: \/dev\/zero:1:1: --config: not a regular file but a character device/);
  });
});
