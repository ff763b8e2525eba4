#!/usr/bin/env node
// The knotless-runner-k8s command: loads the bundled CLI (run `npm run build` first in a checkout).
import { main } from "../dist/cli/knotless-runner-k8s.js";

// A reader that goes away (`knotless-runner-k8s run --help | head -3`) must not crash the command; a run
// keeps going (its logs are in --out) and still deletes its Job.
process.stdout.on("error", (error) => {
  if (error.code !== "EPIPE") throw error;
});
process.exitCode = await main(process.argv.slice(2), process.env);
