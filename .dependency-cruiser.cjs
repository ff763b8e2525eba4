// The layers of src/ and the rules that keep its imports downward (issue 35): `npm run lint:layers`.
//
// Bottom to top; a folder may import its own files, its sub-folders' and those of lower layers, never a higher layer's
// or a sibling's in the same layer. Sub-folders belong to their top folder's layer (cluster/api is in cluster).
const LAYERS = [
  ["core"],
  ["workflow"],
  ["secrets", "transfer"],
  ["events"],
  ["pod"],
  ["manifests"],
  ["config"],
  ["cluster"],
  ["warm"],
  ["executor"],
  ["cache"],
  ["settings", "dry-run"],
  ["run"],
  ["ops"],
  ["serve", "mill"],
  ["cli"],
];

const folders = (names) => `^src/(${names.join("|")})/`;

/** One rule per folder: none of the layers above it, nor its siblings in its own layer. */
const layerRules = LAYERS.flatMap((layer, index) =>
  layer.map((folder) => {
    const above = LAYERS.slice(index + 1).flat();
    const siblings = layer.filter((name) => name !== folder);
    return {
      name: `layer-${folder}`,
      comment: `src/${folder} imports only the layers below it (${LAYERS.slice(0, index).flat().join(", ") || "none"}).`,
      severity: "error",
      from: { path: `^src/${folder}/` },
      to: { path: [folders([...above, ...siblings]), "^src/index\\.ts$"] },
    };
  }),
);

module.exports = {
  forbidden: [
    {
      name: "no-file-cycle",
      comment: "No import cycle between files, type-only imports included.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-folder-cycle",
      comment: "No import cycle between folders (a sub-folder is a folder of its own: cluster/api is not cluster).",
      severity: "error",
      scope: "folder",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "kubectl-transport-private",
      comment:
        "Only the kubectl transport itself (and cluster/transports, the one place that knows the transports by name; index.ts exports them) imports src/cluster/kubectl.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/cluster/kubectl/", "^src/cluster/transports/", "^src/index\\.ts$"] },
      to: { path: "^src/cluster/kubectl/" },
    },
    {
      name: "api-transport-private",
      comment:
        "Only the API transport itself (and cluster/transports, the one place that knows the transports by name; index.ts exports them) imports src/cluster/api.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/cluster/api/", "^src/cluster/transports/", "^src/index\\.ts$"] },
      to: { path: "^src/cluster/api/" },
    },
    {
      name: "executor-contract-transport-free",
      comment: "The executor's contract (src/executor/*.ts) knows no implementation.",
      severity: "error",
      from: { path: "^src/executor/[^/]+$" },
      to: { path: "^src/executor/kubernetes/" },
    },
    {
      name: "no-unresolvable",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
