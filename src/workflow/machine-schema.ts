// The keys that shape the machine a workflow runs on: `architecture`, and the NixOS options `virtualisation` and `services`.
import { readBoolean, readEntries, readMap, readMatching, field, type FieldReader } from "./field-readers.js";
import { isMapNode, reportError, resolveAlias } from "./read-context.js";
import type { SourcePosition } from "./workflow-types.js";

/** Kubernetes' names of CPU architectures (the kubernetes.io/arch label). */
export const readArchitecture = readMatching(
  /^(amd64|arm64|arm|386|ppc64le|s390x|riscv64)$/,
  "an architecture as Kubernetes names it: amd64, arm64, arm, 386, ppc64le, s390x or riscv64",
);

/** `virtualisation.docker: true` (or `{enable: true}`, as NixOS writes it); any other option is refused by name. */
export const readVirtualisation: FieldReader<{ docker?: SourcePosition }> = (ctx, node, at, path) => {
  let docker: SourcePosition | undefined;
  const position = readEntries(
    ctx,
    node,
    at,
    path,
    "a map of NixOS virtualisation options such as docker: true",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (key !== "docker") {
        reportError(
          ctx,
          keyAt,
          keyPath,
          `virtualisation.${key} is not supported by this runner; only virtualisation.docker (a Docker daemon beside the steps) is`,
        );
        return;
      }
      const enabled = isMapNode(ctx, resolveAlias(ctx, value))
        ? readMap(
            ctx,
            value,
            valueAt,
            keyPath,
            { enable: field(readBoolean, { required: true }) },
            "true, or a map such as {enable: true}",
          )?.values.enable
        : readBoolean(ctx, value, valueAt, keyPath);
      if (enabled === true) docker = keyAt;
    },
  );
  return position === undefined ? undefined : docker === undefined ? {} : { docker };
};

/** `services`: NixOS services need a NixOS guest; each one named is refused by name (an empty map is nothing). */
export const readServices: FieldReader<true> = (ctx, node, at, path) => {
  const position = readEntries(ctx, node, at, path, "a map of NixOS services", ({ key, keyAt, keyPath }) => {
    reportError(
      ctx,
      keyAt,
      keyPath,
      `services.${key} is not supported by this runner: NixOS services need a NixOS guest, and the run is a container; start it in a step, or run it in a container with virtualisation.docker`,
    );
  });
  return position === undefined ? undefined : true;
};
