#!/usr/bin/env node
// The knotless-runner-k8s command: loads the bundled CLI (run `npm run build` first in a checkout).
import { main } from "../dist/cli/knotless-runner-k8s.js";

process.exitCode = await main(process.argv.slice(2), process.env);
