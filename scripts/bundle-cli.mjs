// Bundles the compiled CLI (dist/src/cli/main.js and every module it imports from dist/src) into one file.
//
// Why: the runner is started once per workflow run, and its start-up is part of every run's overhead.
// Node 20 loads ES modules file by file, each read through the thread pool and compiled on its own; the
// ~40 modules of a run cost ~30-50 ms before the first kubectl call (bench/RESULTS.md). One file loads in one
// read. npm packages stay outside the bundle (they load only on rare paths: help, errors, --dry-run).
// The library entry point (dist/src/index.js) is not bundled: embedders import the modules as compiled.
import { build } from "esbuild";

await build({
  entryPoints: ["dist/src/cli/main.js"],
  outfile: "dist/cli/knotless-runner-k8s.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
});
