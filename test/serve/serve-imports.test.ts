// The service stands on the library alone: no module under src/serve reaches into the CLI's folder.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

const SERVE_SRC = new URL("../../../src/serve/", import.meta.url);

test("no module of src/serve imports from src/cli, statically or dynamically", () => {
  const files = readdirSync(SERVE_SRC).filter((name) => name.endsWith(".ts"));
  assert.ok(files.length > 10, "src/serve's modules are found");
  const offenders = files.filter((name) =>
    /(?:from\s+|import\()\s*["']\.\.\/cli\//.test(readFileSync(new URL(name, SERVE_SRC), "utf8")),
  );
  assert.deepEqual(offenders, []);
});
