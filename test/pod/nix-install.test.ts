import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { buildNixInstallScript } from "../../src/pod/nix-install.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const SETUP = {
  installables: [
    { kind: "flake", ref: "nixpkgs#go" },
    { kind: "flake", ref: "github:nixos/nixpkgs#hello" },
    { kind: "expression", expression: "python3.withPackages (p: [p.requests])" },
  ],
  registry: [{ name: "nixpkgs", ref: "github:nixos/nixpkgs/nixos-unstable" }],
  substituters: [
    {
      url: "https://nix-community.cachix.org",
      key: "nix-community.cachix.org-1:mB9FSh9qf2dCimDSUo8Zy7bkq5CX+/rkCWyvRCYg3Fs=",
    },
  ],
  position: { line: 3, column: 3 },
} as const;

describe("buildNixInstallScript", () => {
  it("runs under sh -e against a recording nix: each install's words, NIX_CONFIG with the caches, and what later steps get", () => {
    const dir = makeTestTempDir("knotless-nix-install-");
    mkdirSync(join(dir, "bin"));
    writeFileSync(
      join(dir, "bin", "nix"),
      `#!/bin/sh\nfor word in "$@"; do printf '[%s]' "$word"; done >> "${dir}/calls"\necho >> "${dir}/calls"\nprintf '%s\\n---\\n' "$NIX_CONFIG" >> "${dir}/configs"\n`,
    );
    chmodSync(join(dir, "bin", "nix"), 0o755);
    writeFileSync(join(dir, "script.sh"), buildNixInstallScript(SETUP));
    writeFileSync(join(dir, "env"), "");
    execFileSync("sh", ["-e", join(dir, "script.sh")], {
      env: {
        PATH: `${join(dir, "bin")}:/usr/bin:/bin`,
        HOME: "/home/ci",
        KNOTLESS_ENV: join(dir, "env"),
        NIX_CONFIG: "sandbox = false",
      },
    });
    assert.deepEqual(readFileSync(join(dir, "calls"), "utf8").trim().split("\n"), [
      "[profile][install][--profile][/nix/var/nix/profiles/knotless-dependencies][--override-flake][nixpkgs][github:nixos/nixpkgs/nixos-unstable][nixpkgs#go][github:nixos/nixpkgs#hello]",
      '[profile][install][--profile][/nix/var/nix/profiles/knotless-dependencies][--override-flake][nixpkgs][github:nixos/nixpkgs/nixos-unstable][--impure][--expr][with (builtins.getFlake "nixpkgs").legacyPackages.${builtins.currentSystem}; (python3.withPackages (p: [p.requests]))]',
    ]);
    const config =
      "sandbox = false\nexperimental-features = nix-command flakes\nextra-substituters = https://nix-community.cachix.org\nextra-trusted-public-keys = nix-community.cachix.org-1:mB9FSh9qf2dCimDSUo8Zy7bkq5CX+/rkCWyvRCYg3Fs=";
    assert.equal(readFileSync(join(dir, "configs"), "utf8"), `${config}\n---\n${config}\n---\n`);
    assert.equal(
      readFileSync(join(dir, "env"), "utf8"),
      `NIX_CONFIG<<KNOTLESS_NIX_CONFIG\n${config}\nKNOTLESS_NIX_CONFIG\nPATH=/nix/var/nix/profiles/knotless-dependencies/bin:${join(dir, "bin")}:/usr/bin:/bin\n`,
    );
  });

  it("fails the step when nix fails (sh -e)", () => {
    const dir = makeTestTempDir("knotless-nix-install-");
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "bin", "nix"), "#!/bin/sh\nexit 7\n");
    chmodSync(join(dir, "bin", "nix"), 0o755);
    writeFileSync(join(dir, "script.sh"), buildNixInstallScript(SETUP));
    assert.throws(
      () =>
        execFileSync("sh", ["-e", join(dir, "script.sh")], {
          env: { PATH: `${join(dir, "bin")}:/usr/bin:/bin`, HOME: "/h", KNOTLESS_ENV: join(dir, "env") },
          stdio: "pipe",
        }),
      (error: { status?: number }) => error.status === 7,
    );
  });
});
