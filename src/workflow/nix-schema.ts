// Tangled's Nix keys: `dependencies` (a list, or a map of registries), `registry` pins, and the `caches` map of substituters.
import { readEntries, readText, type FieldReader } from "./field-readers.js";
import {
  describeNode,
  indexPath,
  isMapNode,
  isNullValue,
  isSeqNode,
  positionOf,
  reportError,
  resolveAlias,
} from "./read-context.js";
import type { SourcePosition } from "./workflow-types.js";

/** One package as written, with its place. */
export interface PackageAt {
  readonly text: string;
  readonly at: SourcePosition;
  readonly path: string;
}

/** `dependencies` as written: the microvm engine's flat list, or a map of registry to packages (nixery's form). */
export interface ParsedDependencies {
  readonly position: SourcePosition;
  readonly list?: readonly PackageAt[];
  readonly registries: ReadonlyArray<{
    readonly name: string;
    readonly at: SourcePosition;
    readonly packages: readonly PackageAt[];
  }>;
}

/** A nixpkgs attribute path (`go`, `python3Packages.pip`, `beam29Packages.elixir_1_20`). */
export const NIX_ATTRIBUTE = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/** Reads a list of package names, each a non-empty single line. */
function readPackages(
  ctx: Parameters<FieldReader<unknown>>[0],
  node: unknown,
  at: SourcePosition,
  path: string,
): PackageAt[] | undefined {
  const list = resolveAlias(ctx, node);
  if (isNullValue(ctx, list)) return [];
  if (!isSeqNode(ctx, list)) {
    reportError(ctx, at, path, `expected a list of packages, found ${describeNode(ctx, list)}`);
    return undefined;
  }
  const packages: PackageAt[] = [];
  list.items.forEach((item, index) => {
    const itemAt = positionOf(ctx, item) ?? at;
    const itemPath = indexPath(path, index);
    const text = readText(ctx, item, itemAt, itemPath);
    if (text === undefined) return;
    if (text.trim() === "" || /[\x00-\x08\x0a-\x1f\x7f]/.test(text))
      reportError(
        ctx,
        itemAt,
        itemPath,
        `expected a package name, a flake reference (github:nixos/nixpkgs#hello) or a Nix expression on one line, found ${JSON.stringify(text)}`,
      );
    else packages.push({ text: text.trim(), at: itemAt, path: itemPath });
  });
  return packages;
}

export const readDependencies: FieldReader<ParsedDependencies> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  const position = positionOf(ctx, resolved) ?? at;
  if (isSeqNode(ctx, resolved)) {
    const list = readPackages(ctx, resolved, at, path);
    return list === undefined ? undefined : { position, list, registries: [] };
  }
  if (!isMapNode(ctx, resolved)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of packages (engine microvm) or a map of registries to package lists such as nixpkgs: [go, gcc], found ${describeNode(ctx, resolved)}`,
    );
    return undefined;
  }
  const registries: Array<ParsedDependencies["registries"][number]> = [];
  readEntries(
    ctx,
    resolved,
    at,
    path,
    "a map of registries to package lists",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (/\s/.test(key)) {
        reportError(
          ctx,
          keyAt,
          keyPath,
          `expected a registry such as nixpkgs, nixpkgs/nixpkgs-unstable or github:NixOS/nixpkgs/nixpkgs-unstable, found ${JSON.stringify(key)}`,
        );
        return;
      }
      const packages = readPackages(ctx, value, valueAt, keyPath);
      if (packages === undefined) return;
      const bad = packages.filter((item) => !NIX_ATTRIBUTE.test(item.text));
      for (const item of bad)
        reportError(
          ctx,
          item.at,
          item.path,
          `expected a package name such as go or python3Packages.pip, found ${JSON.stringify(item.text)}${describeExpressionInList(item.text)}`,
        );
      if (bad.length === 0) registries.push({ name: key, at: keyAt, packages });
    },
  );
  return { position, registries };
};

const FLAKE_REF = /^[A-Za-z0-9_.+:/?=&~@%#-]+$/;

/**
 * Why a Nix expression (`ghc.withPackages (p: [ p.cabal-install ])`) in a registry's list cannot run, as spindle
 * shows it: its nixery engine joins the nixpkgs names into the Nixery image's path, which no registry takes, so the
 * run fails at its image pull; other registries' names go to `nix profile add REGISTRY#NAME`, not an expression.
 */
function describeExpressionInList(text: string): string {
  if (!/[()[\]:]/.test(text)) return "";
  return "; a Nix expression is not a package name: spindle's nixery engine puts each name in the Nixery image's path, which no registry takes (its run fails at the image pull), so it is refused here before the run; name the package (haskell.compiler.ghc942, cabal-install) or use engine microvm with a NixOS image, whose dependencies may be expressions";
}

/** A cache written as a bare host (`cache.example.org`): spindle's microvm engine refuses it too, for want of http(s). */
function describeBareHost(key: string): string {
  if (!/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(\/\S*)?$/.test(key)) return "";
  return `; spindle's microvm engine refuses it as well (a cache URL must be http:// or https://), so the workflow would not start there either: write https://${key}`;
}

/** `registry`: flake registry names to the references they stand for, as `nix registry add` takes them. */
export const readRegistry: FieldReader<{ pins: Array<{ name: string; ref: string }>; position: SourcePosition }> = (
  ctx,
  node,
  at,
  path,
) => {
  const pins: Array<{ name: string; ref: string }> = [];
  const position = readEntries(
    ctx,
    node,
    at,
    path,
    "a map of flake names to references, such as nixpkgs: github:nixos/nixpkgs/nixos-unstable",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (!/^[A-Za-z0-9_-]+$/.test(key)) {
        reportError(ctx, keyAt, keyPath, `expected a flake name such as nixpkgs, found ${JSON.stringify(key)}`);
        return;
      }
      const ref = readText(ctx, value, valueAt, keyPath);
      if (ref === undefined) return;
      if (FLAKE_REF.test(ref)) pins.push({ name: key, ref });
      else
        reportError(
          ctx,
          valueAt,
          keyPath,
          `expected a flake reference such as github:nixos/nixpkgs/nixos-unstable, found ${JSON.stringify(ref)}`,
        );
    },
  );
  return position === undefined ? undefined : { pins, position };
};

/** Tangled's microvm `caches`: a map of binary cache URL to its public key (`name:base64`). */
export const readSubstituters: FieldReader<{
  substituters: Array<{ url: string; key: string }>;
  position: SourcePosition;
}> = (ctx, node, at, path) => {
  const substituters: Array<{ url: string; key: string }> = [];
  const position = readEntries(
    ctx,
    node,
    at,
    path,
    "a map of binary cache URLs to public keys",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (!/^https?:\/\/[^\s'"]+$/.test(key)) {
        reportError(
          ctx,
          keyAt,
          keyPath,
          `expected a binary cache URL such as https://nix-community.cachix.org, found ${JSON.stringify(key)}${describeBareHost(key)}`,
        );
        return;
      }
      const publicKey = readText(ctx, value, valueAt, keyPath);
      if (publicKey === undefined) return;
      if (/^[^\s:'"]+:[A-Za-z0-9+/=]+$/.test(publicKey)) substituters.push({ url: key, key: publicKey });
      else
        reportError(
          ctx,
          valueAt,
          keyPath,
          `expected a public key such as cache.example.org-1:AbC...=, found ${JSON.stringify(publicKey)}`,
        );
    },
  );
  return position === undefined ? undefined : { substituters, position };
};
