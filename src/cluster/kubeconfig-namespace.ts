// Reads the namespace of the kubeconfig's context without spawning kubectl (so dry runs stay process-free).
import { readFileSync } from "node:fs";
import { delimiter } from "node:path";
import { InputError } from "../core/errors.js";

/** What this module reads of one kubeconfig file, checked for shape. */
interface KubeconfigFile {
  readonly currentContext?: string;
  readonly contexts: ReadonlyArray<{ readonly name?: string; readonly namespace?: string }>;
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
export async function readContextNamespace(
  files: readonly string[],
  context: string | undefined,
  explicit: boolean,
): Promise<string | undefined> {
  const texts: Array<[string, string]> = [];
  for (const file of files) {
    try {
      texts.push([file, readFileSync(file, "utf8")]);
    } catch (error) {
      if (explicit)
        throw new InputError(
          `cannot read the kubeconfig: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
          file,
        );
    }
  }
  if (texts.length === 0 && !context) return undefined;
  const yaml = await import("yaml"); // only when a kubeconfig must be read: ~80 ms of CPU at import
  const docs = texts.map(([file, text]) => parseKubeconfig(yaml, file, text));
  const name = context ?? docs.find((doc) => doc.currentContext)?.currentContext;
  if (!name) return undefined;
  for (const doc of docs) {
    const found = doc.contexts.find((entry) => entry.name === name);
    if (found) return found.namespace || undefined;
  }
  if (context) throw new InputError(`the kubeconfig has no context named "${context}"`, files.join(delimiter));
  return undefined;
}

type YamlModule = typeof import("yaml");

/** Parses one kubeconfig; YAML errors and a shape kubectl would refuse are InputErrors at `file:line`. */
function parseKubeconfig(yaml: YamlModule, file: string, text: string): KubeconfigFile {
  const lineCounter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter });
  const syntax = doc.errors[0];
  if (syntax) {
    const line = syntax.linePos?.[0].line;
    throw new InputError(
      `the kubeconfig is not valid YAML: ${syntax.message.split("\n")[0]!.replace(/:$/, "")}`,
      line === undefined ? file : `${file}:${line}`,
    );
  }
  const at = (path: ReadonlyArray<string | number>): string => {
    const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
    const offset = node?.range?.[0];
    return offset === undefined ? file : `${file}:${lineCounter.linePos(offset).line}`;
  };
  const root: unknown = doc.toJS();
  if (root === null || root === undefined) return { contexts: [] };
  if (!isMapping(root))
    throw new InputError("the kubeconfig must be a mapping (apiVersion, clusters, contexts, ...)", at([]));
  const current = root["current-context"];
  if (current !== undefined && current !== null && typeof current !== "string")
    throw new InputError('"current-context" must be a string', at(["current-context"]));
  const contexts = root.contexts ?? [];
  if (!Array.isArray(contexts))
    throw new InputError('"contexts" must be a list of entries with a name and a context', at(["contexts"]));
  const entries = contexts.map((entry: unknown, index) => {
    if (!isMapping(entry))
      throw new InputError(
        `context entry ${index + 1} must be a mapping with a name and a context`,
        at(["contexts", index]),
      );
    const { name, context } = entry;
    if (name !== undefined && typeof name !== "string")
      throw new InputError(`context entry ${index + 1}: "name" must be a string`, at(["contexts", index, "name"]));
    if (context !== undefined && context !== null && !isMapping(context))
      throw new InputError(
        `context "${String(name)}": "context" must be a mapping`,
        at(["contexts", index, "context"]),
      );
    const namespace = context?.namespace;
    if (namespace !== undefined && namespace !== null && typeof namespace !== "string") {
      throw new InputError(
        `context "${String(name)}": "namespace" must be a string`,
        at(["contexts", index, "context", "namespace"]),
      );
    }
    return { ...(name === undefined ? {} : { name }), ...(typeof namespace === "string" ? { namespace } : {}) };
  });
  return { ...(typeof current === "string" ? { currentContext: current } : {}), contexts: entries };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
