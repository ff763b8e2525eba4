// YAML's stringify, loaded on first use: a static import would be hoisted into the start of the CLI bundle and make every command load yaml.
import { createRequire } from "node:module";
import type * as Yaml from "yaml";

/** Like yaml's stringify; the package is required the first time this is called. */
export function stringify(value: unknown): string {
  return (createRequire(import.meta.url)("yaml") as typeof Yaml).stringify(value);
}
