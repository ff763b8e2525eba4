// Which engine a workflow runs on, and what its Nix keys mean there: the Nixery image's packages, what Nix installs, what is refused.
import { NIX_ATTRIBUTE, type ParsedDependencies } from "./nix-schema.js";
import { reportError, reportWarning, type ReadContext } from "./read-context.js";
import type { EngineName, NixInstallable, NixSetup, SourcePosition } from "./workflow-types.js";

/** The keys the rules read, as the schema gave them. */
export interface EngineKeys {
  readonly engine?: { readonly name: EngineName; readonly written: string };
  readonly engineAt?: SourcePosition;
  readonly image?: string;
  readonly dependencies?: ParsedDependencies;
  readonly registry?: {
    readonly pins: ReadonlyArray<{ name: string; ref: string }>;
    readonly position: SourcePosition;
  };
  readonly substituters?: {
    readonly substituters: ReadonlyArray<{ url: string; key: string }>;
    readonly position: SourcePosition;
  };
  readonly docker?: SourcePosition;
}

export interface EngineChoice {
  readonly engine: EngineName;
  readonly engineFrom: "engine" | "dependencies" | "default";
  readonly enginePosition: SourcePosition;
  readonly nixpkgs?: readonly string[];
  readonly nixpkgsAt?: SourcePosition;
  readonly nix?: NixSetup;
  readonly docker?: SourcePosition;
}

const TOP: SourcePosition = { line: 1, column: 1 };

/** A list item: `flakeref#attr` as written, a nixpkgs attribute as `nixpkgs#attr`, anything else a Nix expression. */
export function classifyPackage(text: string, registry = "nixpkgs"): NixInstallable {
  if (NIX_ATTRIBUTE.test(text)) return { kind: "flake", ref: `${registry}#${text}` };
  if (/^[^\s#]+#[^\s]+$/.test(text)) return { kind: "flake", ref: text };
  return { kind: "expression", expression: text };
}

/**
 * Decides the engine (the `engine` key, else nixery when `dependencies` has `nixpkgs`, else kubernetes) and splits the
 * Nix keys: on nixery, `nixpkgs` makes the image and other registries are installed with Nix; on microvm every
 * dependency is installed with Nix (whether the image can is the runner configuration's to say); on kubernetes none
 * of them applies. Reports what does not fit the engine.
 */
export function chooseEngine(ctx: ReadContext, keys: EngineKeys): EngineChoice {
  const deps = keys.dependencies;
  const nixpkgsEntry = deps?.registries.find((registry) => registry.name === "nixpkgs");
  const engine: EngineName =
    keys.engine?.name ?? (nixpkgsEntry !== undefined ? "nixery" : deps?.list !== undefined ? "microvm" : "kubernetes");
  const engineFrom = keys.engine
    ? "engine"
    : deps !== undefined && (nixpkgsEntry !== undefined || deps.list !== undefined)
      ? "dependencies"
      : "default";
  const enginePosition = keys.engineAt ?? nixpkgsEntry?.at ?? deps?.position ?? TOP;
  const choice = { engine, engineFrom, enginePosition } as const;
  if (engine === "kubernetes") {
    if (deps !== undefined && (deps.list !== undefined || deps.registries.length > 0)) {
      const at = nixpkgsEntry?.at ?? deps.position;
      reportError(
        ctx,
        at,
        nixpkgsEntry ? "dependencies.nixpkgs" : "dependencies",
        `packages need engine nixery or microvm, but engine is ${keys.engine?.written ?? "kubernetes"}, which runs \`image\` as it is; remove \`engine\` or set it to nixery or microvm`,
      );
    }
    refuseMicrovmKeys(ctx, keys, "kubernetes");
    return choice;
  }
  if (engine === "nixery") {
    if (deps?.list !== undefined)
      reportError(
        ctx,
        deps.position,
        "dependencies",
        "a list of packages is the microvm engine's form; the nixery engine takes a map of registries, such as nixpkgs: [go, gcc]",
      );
    refuseMicrovmKeys(ctx, keys, "nixery");
    const nixpkgs = nixpkgsEntry?.packages.map((item) => item.text);
    if (nixpkgs !== undefined && nixpkgs.length > 0 && keys.image !== undefined) {
      reportWarning(
        ctx,
        nixpkgsEntry!.at,
        "dependencies.nixpkgs",
        "not used: `image` is set, so no Nixery image is composed from these packages",
      );
    }
    const others = (deps?.registries ?? []).filter((registry) => registry.name !== "nixpkgs");
    const installables = others.flatMap((registry) =>
      registry.packages.map((item) => classifyPackage(item.text, registry.name)),
    );
    return {
      ...choice,
      ...(nixpkgs !== undefined ? { nixpkgs, nixpkgsAt: nixpkgsEntry!.at } : {}),
      ...(installables.length > 0
        ? { nix: { installables, registry: [], substituters: [], position: others[0]!.at } }
        : {}),
    };
  }
  const installables =
    deps?.list !== undefined
      ? deps.list.map((item) => classifyPackage(item.text))
      : (deps?.registries ?? []).flatMap((registry) =>
          registry.packages.map((item) => classifyPackage(item.text, registry.name)),
        );
  const position = deps?.position ?? keys.registry?.position ?? keys.substituters?.position;
  if (installables.length === 0) {
    for (const [key, at] of [
      ["registry", keys.registry?.position],
      ["caches", keys.substituters?.position],
    ] as const) {
      if (at !== undefined) reportWarning(ctx, at, key, "not used: there are no `dependencies` to install");
    }
  }
  return {
    ...choice,
    ...(position !== undefined && installables.length > 0
      ? {
          nix: {
            installables,
            registry: keys.registry?.pins ?? [],
            substituters: keys.substituters?.substituters ?? [],
            position,
          },
        }
      : {}),
    ...(keys.docker !== undefined ? { docker: keys.docker } : {}),
  };
}

/** `registry`, the `caches` map and `virtualisation` configure a microvm NixOS image: elsewhere they are refused. */
function refuseMicrovmKeys(ctx: ReadContext, keys: EngineKeys, engine: string): void {
  for (const [key, at] of [
    ["registry", keys.registry?.position],
    ["caches", keys.substituters?.position],
    ["virtualisation.docker", keys.docker],
  ] as const) {
    if (at !== undefined)
      reportError(
        ctx,
        at,
        key,
        `configures a NixOS image of the microvm engine; this workflow's engine is ${engine}: set engine: microvm with a NixOS image, or remove it`,
      );
  }
}
