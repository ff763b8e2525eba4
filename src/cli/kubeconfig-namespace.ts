// Reads the namespace of the kubeconfig's context without spawning kubectl (so dry runs stay process-free).
import { readFileSync } from "node:fs";
import { delimiter } from "node:path";
import { InputError } from "../errors.js";

interface KubeconfigFile {
  "current-context"?: string;
  contexts?: Array<{ name?: string; context?: { namespace?: string } }>;
}

/** The kubeconfig files kubectl would read: --kubeconfig, else $KUBECONFIG (a list), else ~/.kube/config. */
export function listKubeconfigFiles(explicit: string | undefined, env: NodeJS.ProcessEnv, home: string): string[] {
  if (explicit) return [explicit];
  if (env.KUBECONFIG) return env.KUBECONFIG.split(delimiter).filter(Boolean);
  return [`${home}/.kube/config`];
}

/**
 * The namespace kubectl would use: the context's (named, else current; first file that sets it wins, as kubectl
 * merges), or undefined. Missing default files are fine; an unreadable or malformed explicit file is an InputError.
 */
export async function readContextNamespace(files: readonly string[], context: string | undefined, explicit: boolean): Promise<string | undefined> {
  const texts: Array<[string, string]> = [];
  for (const file of files) {
    try {
      texts.push([file, readFileSync(file, "utf8")]);
    } catch (error) {
      if (explicit) throw new InputError(`cannot read the kubeconfig: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, file);
    }
  }
  if (texts.length === 0 && !context) return undefined;
  const { parse } = await import("yaml"); // loaded only when a kubeconfig must be read: it is much of start-up
  const docs: KubeconfigFile[] = [];
  for (const [file, text] of texts) {
    try {
      docs.push((parse(text) ?? {}) as KubeconfigFile);
    } catch (error) {
      throw new InputError(`the kubeconfig is not valid YAML: ${(error as Error).message.split("\n")[0]}`, file);
    }
  }
  const name = context ?? docs.find((doc) => doc["current-context"])?.["current-context"];
  if (!name) return undefined;
  for (const doc of docs) {
    const found = doc.contexts?.find((entry) => entry.name === name);
    if (found) return found.context?.namespace || undefined;
  }
  if (context) throw new InputError(`the kubeconfig has no context named "${context}"`, files.join(delimiter));
  return undefined;
}
