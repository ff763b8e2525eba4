// Resolves the kubeconfig as kubectl reads it (merge order, context, TLS, credentials) into one typed value.
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { kubeconfigError } from "./api-errors.js";

/** Which kubeconfig to read: the files kubectl would (--kubeconfig, else $KUBECONFIG's list, else ~/.kube/config). */
export interface KubeconfigSelection {
  readonly files: readonly string[];
  /** --kubeconfig was given: its file must exist. $KUBECONFIG's and the default file may be missing. */
  readonly explicit: boolean;
  /** --context; else the merged `current-context`. */
  readonly context?: string;
}

/** An exec credential plugin as the kubeconfig's user names it, paths resolved. */
export interface ExecPluginConfig {
  readonly apiVersion: "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1";
  readonly command: string;
  readonly args: readonly string[];
  readonly env: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  readonly installHint?: string;
  readonly provideClusterInfo: boolean;
  readonly interactiveMode?: "Never" | "IfAvailable" | "Always";
}

/** How the user authenticates; `none` also over plain http, where kubectl sends no credentials at all. */
export type UserAuth =
  | { readonly kind: "none" }
  | { readonly kind: "token"; readonly token: string }
  | { readonly kind: "token-file"; readonly path: string }
  | { readonly kind: "basic"; readonly username: string; readonly password: string }
  | { readonly kind: "exec"; readonly plugin: ExecPluginConfig };

/** The one cluster, user and namespace a transport talks to. Holds credentials: never print or log it. */
export interface ResolvedKubeconfig {
  readonly contextName: string;
  /** The context's namespace, else "default". */
  readonly namespace: string;
  /** The server's base URL without a trailing slash. */
  readonly server: string;
  readonly tls: {
    /** PEM of the CA bundle, or undefined for the system's roots. */
    readonly ca?: string;
    readonly insecureSkipVerify: boolean;
    readonly serverName?: string;
    /** PEM of the client certificate and key (both or neither). */
    readonly cert?: string;
    readonly key?: string;
  };
  readonly proxyUrl?: string;
  /** Names the cluster and user entries, for the pool's identity and for messages (no secret). */
  readonly clusterName: string;
  readonly userName: string;
  readonly auth: UserAuth;
}

type Mapping = Record<string, unknown>;

interface LoadedFile {
  readonly file: string;
  readonly doc: Mapping;
}

/**
 * Reads the selected files and resolves the context as kubectl does: each named cluster, user and context comes whole
 * from the first file that defines it, `current-context` from the first file that sets it, and relative paths are
 * relative to the file that holds them. Throws the kubeconfig error (ConfigError) for anything kubectl would refuse
 * and for what the API transport cannot do (auth-provider, impersonation), naming `--transport kubectl`.
 */
export function resolveKubeconfig(
  selection: KubeconfigSelection,
  parse: (text: string, file: string) => unknown,
): ResolvedKubeconfig {
  const loaded: LoadedFile[] = [];
  for (const file of selection.files) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      if (selection.explicit)
        throw kubeconfigError(
          `cannot read the kubeconfig: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
          file,
        );
      continue;
    }
    const doc = parse(text, file);
    if (doc === null || doc === undefined) continue;
    if (!isMapping(doc))
      throw kubeconfigError("the kubeconfig must be a mapping (apiVersion, clusters, contexts, ...)", file);
    loaded.push({ file: resolve(file), doc });
  }
  const where = selection.files.join(":") || "(no kubeconfig)";
  const contextName = selection.context ?? firstString(loaded, "current-context");
  if (!contextName)
    throw kubeconfigError("no context: the kubeconfig sets no current-context and no --context was given", where);
  const context = findEntry(loaded, "contexts", "context", contextName);
  if (!context) throw kubeconfigError(`the kubeconfig has no context named "${contextName}"`, where);
  const clusterName = readString(context.value, "cluster", context.file, `context "${contextName}"`);
  if (!clusterName) throw kubeconfigError(`context "${contextName}" names no cluster`, context.file);
  const cluster = findEntry(loaded, "clusters", "cluster", clusterName);
  if (!cluster)
    throw kubeconfigError(
      `context "${contextName}" names cluster "${clusterName}", which the kubeconfig does not define`,
      context.file,
    );
  const userName = readString(context.value, "user", context.file, `context "${contextName}"`) ?? "";
  const user = userName ? findEntry(loaded, "users", "user", userName) : undefined;
  if (userName && !user)
    throw kubeconfigError(
      `context "${contextName}" names user "${userName}", which the kubeconfig does not define`,
      context.file,
    );

  const c = cluster.value;
  const what = `cluster "${clusterName}"`;
  const server = readString(c, "server", cluster.file, what);
  if (!server) throw kubeconfigError(`${what} has no server`, cluster.file);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw kubeconfigError(`${what}: server "${server}" is not a URL`, cluster.file);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw kubeconfigError(`${what}: server "${server}" must be http or https`, cluster.file);
  const secure = url.protocol === "https:";
  const ca = readPem(c, "certificate-authority", cluster.file, what);
  const insecureSkipVerify = c["insecure-skip-tls-verify"] === true;
  if (insecureSkipVerify && ca)
    throw kubeconfigError(
      `${what}: certificate-authority and insecure-skip-tls-verify cannot both be set (kubectl refuses this too)`,
      cluster.file,
    );
  const serverName = readString(c, "tls-server-name", cluster.file, what);
  const proxyUrl = readString(c, "proxy-url", cluster.file, what);
  if (proxyUrl && !/^https?:\/\//.test(proxyUrl)) {
    throw kubeconfigError(
      `${what}: proxy-url "${proxyUrl}": the API transport speaks only http and https proxies; use --transport kubectl for ${proxyUrl.split(":")[0]}`,
      cluster.file,
    );
  }

  // kubectl uses a user's credentials only towards an https server.
  const u = secure && user ? user.value : {};
  const uwhat = `user "${userName}"`;
  const ufile = user?.file ?? "";
  for (const key of ["auth-provider", "as", "as-uid", "as-groups", "as-user-extra"]) {
    if (u[key] !== undefined && u[key] !== null) {
      const kind = key === "auth-provider" ? "auth-provider plugins" : "impersonation";
      throw kubeconfigError(
        `${uwhat} uses ${key}: the API transport does not do ${kind}; use --transport kubectl`,
        ufile,
      );
    }
  }
  const cert = readPem(u, "client-certificate", ufile, uwhat);
  const key = readPem(u, "client-key", ufile, uwhat);
  if (!!cert !== !!key)
    throw kubeconfigError(`${uwhat}: client-certificate and client-key must be given together`, ufile);
  const auth = readAuth(u, ufile, uwhat);

  const ns = readString(context.value, "namespace", context.file, `context "${contextName}"`);
  return {
    contextName,
    namespace: ns || "default",
    server: server.replace(/\/+$/, ""),
    tls: {
      ...(ca ? { ca } : {}),
      insecureSkipVerify,
      ...(serverName ? { serverName } : {}),
      ...(cert && key ? { cert, key } : {}),
    },
    ...(proxyUrl ? { proxyUrl } : {}),
    clusterName,
    userName,
    auth,
  };
}

function readAuth(u: Mapping, file: string, what: string): UserAuth {
  const exec = u.exec;
  if (exec !== undefined && exec !== null) return { kind: "exec", plugin: readExecPlugin(exec, file, what) };
  const token = readString(u, "token", file, what);
  if (token) return { kind: "token", token };
  const tokenFile = readString(u, "tokenFile", file, what);
  if (tokenFile) return { kind: "token-file", path: resolvePath(file, tokenFile) };
  const username = readString(u, "username", file, what);
  const password = readString(u, "password", file, what);
  if (username || password) return { kind: "basic", username: username ?? "", password: password ?? "" };
  return { kind: "none" };
}

const EXEC_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] as const;

function readExecPlugin(exec: unknown, file: string, what: string): ExecPluginConfig {
  if (!isMapping(exec)) throw kubeconfigError(`${what}: exec must be a mapping`, file);
  const apiVersion = exec.apiVersion;
  if (!EXEC_VERSIONS.includes(apiVersion as (typeof EXEC_VERSIONS)[number])) {
    throw kubeconfigError(
      `${what}: exec apiVersion "${String(apiVersion)}" is not one the API transport speaks (${EXEC_VERSIONS.join(", ")}); use --transport kubectl`,
      file,
    );
  }
  const command = readString(exec, "command", file, `${what} exec`);
  if (!command) throw kubeconfigError(`${what}: exec has no command`, file);
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
    throw kubeconfigError(`${what}: exec args must be a list of strings`, file);
  const env = exec.env ?? [];
  if (
    !Array.isArray(env) ||
    !env.every((e) => isMapping(e) && typeof e.name === "string" && typeof e.value === "string")
  ) {
    throw kubeconfigError(`${what}: exec env must be a list of {name, value} strings`, file);
  }
  const mode = exec.interactiveMode;
  if (mode !== undefined && mode !== "Never" && mode !== "IfAvailable" && mode !== "Always")
    throw kubeconfigError(`${what}: exec interactiveMode "${String(mode)}" is not Never, IfAvailable or Always`, file);
  if (mode === "Always")
    throw kubeconfigError(`${what}: exec interactiveMode Always needs a terminal; a runner has none`, file);
  const hint = readString(exec, "installHint", file, `${what} exec`);
  return {
    apiVersion: apiVersion as ExecPluginConfig["apiVersion"],
    // kubectl resolves a command with a slash relative to the kubeconfig; a bare name is looked up on PATH.
    command: command.includes("/") ? resolvePath(file, command) : command,
    args: args as string[],
    env: (env as Mapping[]).map((e) => ({ name: e.name as string, value: e.value as string })),
    ...(hint ? { installHint: hint } : {}),
    provideClusterInfo: exec.provideClusterInfo === true,
    ...(mode ? { interactiveMode: mode } : {}),
  };
}

/** `<key>-data` (base64) wins over `<key>` (a path relative to the file); the PEM text, or undefined. */
function readPem(m: Mapping, key: string, file: string, what: string): string | undefined {
  const data = readString(m, `${key}-data`, file, what);
  if (data) return Buffer.from(data, "base64").toString("utf8");
  const path = readString(m, key, file, what);
  if (!path) return undefined;
  try {
    return readFileSync(resolvePath(file, path), "utf8");
  } catch (error) {
    throw kubeconfigError(
      `${what}: cannot read ${key} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      file,
    );
  }
}

function resolvePath(file: string, path: string): string {
  return isAbsolute(path) || !file ? path : resolve(dirname(file), path);
}

function readString(m: Mapping, key: string, file: string, what: string): string | undefined {
  const value = m[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw kubeconfigError(`${what}: "${key}" must be a string`, file);
  return value;
}

function firstString(files: readonly LoadedFile[], key: string): string | undefined {
  for (const { file, doc } of files) {
    const value = readString(doc, key, file, "the kubeconfig");
    if (value) return value;
  }
  return undefined;
}

/** The entry of that name from the first file that defines it (kubectl's merge: the first file wins per name). */
function findEntry(
  files: readonly LoadedFile[],
  list: string,
  field: string,
  name: string,
): { value: Mapping; file: string } | undefined {
  for (const { file, doc } of files) {
    const entries = doc[list];
    if (entries === undefined || entries === null) continue;
    if (!Array.isArray(entries)) throw kubeconfigError(`"${list}" must be a list`, file);
    for (const entry of entries) {
      if (!isMapping(entry) || entry.name !== name) continue;
      const value = entry[field] ?? {};
      if (!isMapping(value)) throw kubeconfigError(`${field} "${name}" must be a mapping`, file);
      return { value, file };
    }
  }
  return undefined;
}

function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
