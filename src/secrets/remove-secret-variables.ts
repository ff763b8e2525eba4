// The environment the runner's children (kubectl) get: the runner's own, without the variables that hold a secret.
import type { Secret } from "./secret.js";

/**
 * A copy of `env` without every variable named like a secret and holding its value: what `--secret-env NAME`
 * read. kubectl never needs them, and a child's environment is readable in /proc/PID/environ and handed on to
 * every process it starts (a kubeconfig's exec credential plugin among them).
 */
export function removeSecretVariables(env: NodeJS.ProcessEnv, secrets: readonly Secret[]): NodeJS.ProcessEnv {
  if (secrets.length === 0) return env;
  const copy = { ...env };
  for (const secret of secrets) if (copy[secret.name] === secret.value) delete copy[secret.name];
  return copy;
}
