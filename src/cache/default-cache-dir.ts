// Where the host cache store lives unless --cache-dir says: under the user's cache directory, as the XDG spec has it.
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/**
 * `$XDG_CACHE_HOME/knotless-runner-k8s` when XDG_CACHE_HOME is an absolute path (the spec says to ignore a relative
 * one), else `<home>/.cache/knotless-runner-k8s`, home being $HOME or, without it, `home` (the account's). The CLI
 * hands in its environment; nothing here reads process.env.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv, home: string = homedir()): string {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && xdg !== "" && isAbsolute(xdg)) return join(xdg, "knotless-runner-k8s");
  return join(env.HOME !== undefined && env.HOME !== "" ? env.HOME : home, ".cache", "knotless-runner-k8s");
}
