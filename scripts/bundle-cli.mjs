// Bundles the compiled CLI (dist/src/cli/main.js and every module it imports from dist/src) into one file, and the
// tests' fake kubectl into another.
//
// Why: the runner is started once per workflow run, and its start-up is part of every run's overhead.
// Node 20 loads ES modules file by file, each read through the thread pool and compiled on its own; the
// ~40 modules of a run cost ~30-50 ms before the first kubectl call (bench/RESULTS.md). One file loads in one
// read. npm packages stay outside the bundle (they load only on rare paths: help, errors, --dry-run).
// The library entry point (dist/src/index.js) is not bundled: embedders import the modules as compiled.
import { copyFileSync } from "node:fs";
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

// The tests' fake kubectl (test/fixtures/fake-kubectl), likewise: it starts once per kubectl call of every fake-kubectl
// test and benchmark, thousands of times in `npm test`; one file saves ~40 ms of module loading each time.
// test/fixtures/bin/kubectl runs the bundle only while it is newer than the compiled main.js (a `tsc` alone rebuilds
// the modules, not the bundle).
await build({
  entryPoints: ["dist/test/fixtures/fake-kubectl/main.js"],
  outfile: "dist/test/fixtures/fake-kubectl.bundle.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});

// The mill executor's protobuf schema is read as text at run time (src/mill/mill-codec.ts reads it beside its module):
// one copy beside the compiled module for the library and the tests, one beside the bundle for the CLI.
copyFileSync("src/mill/mill.proto", "dist/src/mill/mill.proto");
copyFileSync("src/mill/mill.proto", "dist/cli/mill.proto");
