// The step that installs a workflow's Nix dependencies before its first step: a pure function of the workflow's Nix keys.
import { quoteShellWord } from "./env-file.js";
import type { NixSetup } from "../workflow/workflow-types.js";

/** The name the install step runs under in logs and results. */
export const NIX_INSTALL_STEP_NAME = "install dependencies (nix)";

/**
 * The profile the dependencies go into: one of their own, since the image's default profile may be nix-env's
 * (the nixos/nix image's is), which `nix profile install` refuses to touch.
 */
export const NIX_DEPENDENCIES_PROFILE = "/nix/var/nix/profiles/knotless-dependencies";

/** An expression is evaluated with nixpkgs (as the registry resolves it) in scope, for the node's system. */
function wrapExpression(expression: string): string {
  return `with (builtins.getFlake "nixpkgs").legacyPackages.\${builtins.currentSystem}; (${expression})`;
}

/**
 * The install step's script. It sets NIX_CONFIG (flakes on, the workflow's caches as extra substituters with their
 * keys), installs every flake installable in one `nix profile install` into NIX_DEPENDENCIES_PROFILE (with
 * `--override-flake` for each `registry` pin) and each Nix expression in its own (`--impure --expr`), then hands
 * NIX_CONFIG and a PATH with that profile's bin first to the later steps through $KNOTLESS_ENV. Quoted for a POSIX shell: nothing of the file is evaluated by it.
 */
export function buildNixInstallScript(nix: NixSetup): string {
  const config = [
    "experimental-features = nix-command flakes",
    ...(nix.substituters.length > 0
      ? [
          `extra-substituters = ${nix.substituters.map((s) => s.url).join(" ")}`,
          `extra-trusted-public-keys = ${nix.substituters.map((s) => s.key).join(" ")}`,
        ]
      : []),
  ].join("\n");
  const overrides = nix.registry
    .map((pin) => `--override-flake ${quoteShellWord(pin.name)} ${quoteShellWord(pin.ref)}`)
    .join(" ");
  const install = ["nix profile install --profile", NIX_DEPENDENCIES_PROFILE, ...(overrides ? [overrides] : [])].join(
    " ",
  );
  const flakes = nix.installables.flatMap((item) => (item.kind === "flake" ? [quoteShellWord(item.ref)] : []));
  const expressions = nix.installables.flatMap((item) => (item.kind === "expression" ? [item.expression] : []));
  return [
    // Kept after what the image's NIX_CONFIG says (a literal newline between them, inside the double quotes).
    `NIX_CONFIG="\${NIX_CONFIG:+$NIX_CONFIG\n}"${quoteShellWord(config)}`,
    "export NIX_CONFIG",
    ...(flakes.length > 0 ? [`${install} ${flakes.join(" ")}`] : []),
    ...expressions.map((expression) => `${install} --impure --expr ${quoteShellWord(wrapExpression(expression))}`),
    `printf 'NIX_CONFIG<<KNOTLESS_NIX_CONFIG\\n%s\\nKNOTLESS_NIX_CONFIG\\nPATH=%s\\n' "$NIX_CONFIG" "${NIX_DEPENDENCIES_PROFILE}/bin:$PATH" >> "$KNOTLESS_ENV"`,
    "",
  ].join("\n");
}
