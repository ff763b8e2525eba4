#!/usr/bin/env node
// The knotless-runner-k8s command: loads the bundled CLI (run `npm run build` first in a checkout).
import { main } from "../dist/cli/knotless-runner-k8s.js";

// A reader that goes away (`knotless-runner-k8s run --help | head -3`, a daemon that closed our stderr) must
// not crash the command; a run keeps going (its logs are in --out) and still deletes its Job.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
  });
}
process.exitCode = await main(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
