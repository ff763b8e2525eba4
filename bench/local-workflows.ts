// The inputs of the local-cluster benchmarks: the small checkout, steps files, and the step that fills /outputs.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** The 2-file checkout of the core's overhead benchmark. */
export async function prepareSmallCheckout(dir: string): Promise<string> {
  const checkoutDir = join(dir, "checkout");
  await mkdir(join(checkoutDir, "src"), { recursive: true });
  await writeFile(join(checkoutDir, "README.md"), "# bench\n");
  await writeFile(join(checkoutDir, "src", "main.c"), "int main(void) { return 0; }\n");
  return checkoutDir;
}

export async function writeStepsFile(
  dir: string,
  name: string,
  steps: ReadonlyArray<readonly [string, string]>,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  await writeFile(path, steps.map(([step, script]) => `${step}\t${script}`).join("\n") + "\n");
  return path;
}

export const OUTPUT_FILES = 10_000;
export const OUTPUT_FILE_BYTES = 20_000;
export const OUTPUT_DIRS = 100;

/**
 * One busybox awk process writes 10,000 files of 20,000 bytes (200,000,000 bytes) into /outputs/d0..d99: a 19-digit
 * serial line, then a slice of a random 1,000-character pattern (nothing on the path compresses: tar, the exec
 * WebSocket without permessage-deflate, podman exec). One process instead of 10,000 `head` forks: ~8 s, not ~40 s.
 */
export const FILL_OUTPUTS_STEP =
  `awk 'BEGIN { srand(7); c = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"; s = ""; ` +
  `for (i = 0; i < 1000; i++) s = s substr(c, int(rand() * 64) + 1, 1); t = s; while (length(t) < 40000) t = t t; ` +
  `dirs = ""; for (d = 0; d < ${OUTPUT_DIRS}; d++) dirs = dirs " /outputs/d" d; if (system("mkdir -p" dirs) != 0) exit 1; ` +
  `for (n = 0; n < ${OUTPUT_FILES}; n++) { f = sprintf("/outputs/d%d/f%04d.bin", n % ${OUTPUT_DIRS}, n); k = (n * 7919) % 20000; ` +
  `printf "%s", sprintf("%019d\\n", n) substr(t, k + 1, ${OUTPUT_FILE_BYTES - 20}) > f; close(f) } }'`;
