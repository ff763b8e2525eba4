// Reads the kubeconfig files with the YAML parser (loaded only here) and resolves them: YAML errors at file:line.
import { kubeconfigError } from "./api-errors.js";
import { resolveKubeconfig, type KubeconfigSelection, type ResolvedKubeconfig } from "./kubeconfig.js";

/** resolveKubeconfig with YAML parsing; a file that is not YAML is the kubeconfig error at its line. */
export async function loadKubeconfig(selection: KubeconfigSelection): Promise<ResolvedKubeconfig> {
  // yaml loads on first use: ~80 ms of CPU that --help and a --steps run would pay (docs/architecture.md).
  const yaml = await import("yaml");
  return resolveKubeconfig(selection, (text, file) => {
    const lineCounter = new yaml.LineCounter();
    const doc = yaml.parseDocument(text, { lineCounter });
    const syntax = doc.errors[0];
    if (syntax) {
      const line = syntax.linePos?.[0].line;
      throw kubeconfigError(
        `the kubeconfig is not valid YAML: ${syntax.message.split("\n")[0]!.replace(/:$/, "")}`,
        line === undefined ? file : `${file}:${line}`,
      );
    }
    return doc.toJS();
  });
}
