// Clones a git checkout at one commit on the runner's host (fetch of exactly that sha, depth and submodules as asked), for a run whose image has no git to clone it in the pod.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { InputError } from "../core/errors.js";
import { TAIL_MAX_CHARS, tailText } from "../core/tail-text.js";

export interface GitCheckoutSpec {
  readonly url: string;
  readonly sha: string;
  /** Commits fetched (1: the commit alone, as Tangled fetches by default). */
  readonly depth: number;
  readonly submodules: boolean;
  /** Fetch every tag as well (spindle's `git fetch --tags`, each at the same depth); absent: no tags. */
  readonly tags?: boolean;
}

/** The git binary and the environment it runs with, resolved at the CLI edge. */
export interface GitSetting {
  readonly binary: string;
  readonly env: NodeJS.ProcessEnv;
}

/** A clone on the host that failed: the run fails with errorReason "checkout-failed" before its upload. */
export class GitCheckoutError extends Error {
  override readonly name = "GitCheckoutError";
}

/** The transports a clone may use: no `ext::` or other helper that runs a command. */
const ALLOWED_PROTOCOLS = "https:http:git:ssh:file";

/**
 * Checks a git source before anything is queued (InputError): a URL of an allowed scheme without credentials in it
 * (they would be stored with the request and could reach a log), and a full commit sha.
 */
export function checkGitSource(url: string, sha: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError(
      `checkout.git.url expects a URL (https://, http://, git://, ssh:// or file://), got ${JSON.stringify(url)}`,
    );
  }
  if (!ALLOWED_PROTOCOLS.split(":").includes(parsed.protocol.slice(0, -1)))
    throw new InputError(`checkout.git.url: the scheme ${parsed.protocol} is not taken (https, http, git, ssh, file)`);
  if (parsed.password !== "")
    throw new InputError(
      "checkout.git.url carries a password: credentials in a URL are not taken (the URL is stored with the run)",
    );
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(sha))
    throw new InputError(
      `checkout.git.sha expects a full commit id (40 or 64 lowercase hex digits), got ${JSON.stringify(sha)}`,
    );
}

/**
 * Makes `dir` a checkout of `spec.sha` (detached, with its .git): init, fetch of that one commit at the asked depth
 * (and every tag when asked), checkout, then submodules when asked. Rejects with GitCheckoutError naming the git command and its message (its end, bounded by tailText), or
 * with node's AbortError when `signal` aborts (the git process is killed).
 */
export async function cloneAtSha(
  spec: GitCheckoutSpec,
  dir: string,
  git: GitSetting,
  signal: AbortSignal,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const env = { ...git.env, GIT_TERMINAL_PROMPT: "0", GIT_ALLOW_PROTOCOL: ALLOWED_PROTOCOLS };
  const run = (args: readonly string[]): Promise<void> =>
    new Promise((resolve, reject) => {
      const child = spawn(git.binary, args, { env, stdio: ["ignore", "ignore", "pipe"], signal });
      let stderr = "";
      child
        .stderr!.setEncoding("utf8")
        .on("data", (text: string) => (stderr = (stderr + text).slice(-2 * TAIL_MAX_CHARS)));
      child.on("error", (error) => reject(signal.aborted ? error : new GitCheckoutError(`git: ${error.message}`)));
      child.on("close", (code) => {
        if (code === 0) resolve();
        else
          reject(
            new GitCheckoutError(
              `git ${args[0] === "-C" ? args[2] : args[0]} failed (exit ${code}): ${tailText(stderr)}`,
            ),
          );
      });
    });
  await run(["init", "-q", dir]);
  const tags = spec.tags === true ? "--tags" : "--no-tags";
  await run(["-C", dir, "fetch", "-q", tags, "--depth", String(spec.depth), "--", spec.url, spec.sha]);
  await run(["-C", dir, "checkout", "-q", "--detach", "FETCH_HEAD"]);
  if (spec.submodules)
    await run(["-C", dir, "submodule", "update", "-q", "--init", "--recursive", "--depth", String(spec.depth)]);
}
