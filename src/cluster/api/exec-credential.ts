// Runs a kubeconfig's exec credential plugin (client.authentication.k8s.io v1, v1beta1) and caches what it prints.
import { spawn } from "node:child_process";
import { UnauthorizedError } from "../errors.js";
import type { ExecPluginConfig } from "./kubeconfig.js";

/** What a plugin handed out: a bearer token, a client certificate, or both. */
export interface ExecCredential {
  readonly token?: string;
  readonly clientCertificateData?: string;
  readonly clientKeyData?: string;
  /** Epoch ms; undefined: valid until a 401 says otherwise. */
  readonly expiresAt?: number;
}

export interface ExecCredentialOptions {
  /** The environment the plugin inherits (the CLI's, passed down): the kubeconfig's env entries are added to it. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** What `provideClusterInfo` hands the plugin in KUBERNETES_EXEC_INFO. */
  readonly cluster?: {
    readonly server: string;
    readonly certificateAuthorityData?: string;
    readonly insecureSkipTlsVerify?: boolean;
    readonly tlsServerName?: string;
  };
  /** A credential is run again this long before its expirationTimestamp (default 60 s). */
  readonly refreshMarginMs?: number;
  /** The plugin is killed and the credential refused after this long (default 60 s). */
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

const MAX_OUTPUT = 1024 * 1024;

/**
 * One plugin's credential, shared by every request of an identity. `get` runs the plugin when there is no credential
 * or it expires within the margin; concurrent callers wait for the one run (never two plugin processes at once).
 * `invalidate` (after a 401) drops the credential it names, so the next `get` runs the plugin again. A plugin that
 * fails, hangs, or prints anything but an ExecCredential of its apiVersion rejects with UnauthorizedError
 * naming the plugin (never what it printed on stdout: that may hold a token).
 */
export class ExecCredentialSource {
  private cached: ExecCredential | undefined;
  private running: Promise<ExecCredential> | undefined;

  constructor(
    private readonly plugin: ExecPluginConfig,
    private readonly options: ExecCredentialOptions,
  ) {}

  /** The current credential, running the plugin when needed. */
  get(): Promise<ExecCredential> {
    const now = (this.options.now ?? Date.now)();
    const margin = this.options.refreshMarginMs ?? 60_000;
    const cached = this.cached;
    if (cached && (cached.expiresAt === undefined || cached.expiresAt - margin > now)) return Promise.resolve(cached);
    if (!this.running) {
      this.running = this.run().then(
        (credential) => {
          this.cached = credential;
          this.running = undefined;
          return credential;
        },
        (error: unknown) => {
          this.running = undefined;
          throw error;
        },
      );
    }
    return this.running;
  }

  /** Forgets `used` (the credential a request was refused with) unless a newer one replaced it already. */
  invalidate(used: ExecCredential): void {
    if (this.cached === used) this.cached = undefined;
  }

  private async run(): Promise<ExecCredential> {
    const { plugin } = this;
    const name = plugin.command;
    const info = {
      apiVersion: plugin.apiVersion,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        ...(plugin.provideClusterInfo && this.options.cluster
          ? {
              cluster: {
                server: this.options.cluster.server,
                ...(this.options.cluster.certificateAuthorityData
                  ? { "certificate-authority-data": this.options.cluster.certificateAuthorityData }
                  : {}),
                ...(this.options.cluster.insecureSkipTlsVerify ? { "insecure-skip-tls-verify": true } : {}),
                ...(this.options.cluster.tlsServerName
                  ? { "tls-server-name": this.options.cluster.tlsServerName }
                  : {}),
              },
            }
          : {}),
      },
    };
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.options.env)) if (v !== undefined) env[k] = v;
    for (const { name: k, value } of plugin.env) env[k] = value;
    env.KUBERNETES_EXEC_INFO = JSON.stringify(info);
    const fail = (why: string): UnauthorizedError =>
      new UnauthorizedError(`the kubeconfig's exec credential plugin ${name} ${why}`);

    const child = spawn(plugin.command, [...plugin.args], { env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let errText = "";
    child.stdout.on("data", (d: Buffer) => {
      outBytes += d.length;
      if (outBytes <= MAX_OUTPUT) out.push(d);
    });
    child.stderr.on("data", (d: Buffer) => (errText = (errText + d.toString()).slice(-4096)));
    const timeoutMs = this.options.timeoutMs ?? 60_000;
    const ended = await new Promise<{ code: number | null; error?: NodeJS.ErrnoException; timedOut: boolean }>(
      (resolve) => {
        const timer = setTimeout(() => {
          child.kill("SIGKILL");
          resolve({ code: null, timedOut: true });
        }, timeoutMs);
        child.on("error", (error) => {
          clearTimeout(timer);
          resolve({ code: null, error, timedOut: false });
        });
        child.on("close", (code) => {
          clearTimeout(timer);
          resolve({ code, timedOut: false });
        });
      },
    );
    const lastLine = errText.trim().split("\n").at(-1);
    if (ended.error) {
      const hint = ended.error.code === "ENOENT" && plugin.installHint ? `; ${plugin.installHint.trim()}` : "";
      throw fail(`could not be started: ${ended.error.code ?? ended.error.message}${hint}`);
    }
    if (ended.timedOut) throw fail(`did not answer within ${timeoutMs} ms`);
    if (ended.code !== 0) throw fail(`exited ${ended.code}${lastLine ? `: ${lastLine}` : ""}`);
    if (outBytes > MAX_OUTPUT) throw fail(`printed more than ${MAX_OUTPUT} bytes`);
    return this.parse(Buffer.concat(out).toString("utf8"), fail);
  }

  private parse(text: string, fail: (why: string) => UnauthorizedError): ExecCredential {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw fail("printed something that is not JSON (an ExecCredential was expected)");
    }
    const d = doc as { apiVersion?: unknown; kind?: unknown; status?: Record<string, unknown> };
    if (typeof doc !== "object" || doc === null || d.kind !== "ExecCredential")
      throw fail("printed JSON that is not an ExecCredential");
    if (d.apiVersion !== this.plugin.apiVersion)
      throw fail(
        `answered apiVersion ${String(d.apiVersion)}, not the ${this.plugin.apiVersion} the kubeconfig asked for`,
      );
    const status = d.status;
    if (typeof status !== "object" || status === null) throw fail("printed an ExecCredential without a status");
    const str = (key: string): string | undefined =>
      typeof status[key] === "string" && status[key] !== "" ? (status[key] as string) : undefined;
    const token = str("token");
    const cert = str("clientCertificateData");
    const key = str("clientKeyData");
    if (!!cert !== !!key) throw fail("printed only one of clientCertificateData and clientKeyData");
    if (!token && !cert) throw fail("printed an ExecCredential with neither a token nor a client certificate");
    const expiry = status.expirationTimestamp;
    let expiresAt: number | undefined;
    if (expiry !== undefined && expiry !== null) {
      expiresAt = typeof expiry === "string" ? Date.parse(expiry) : NaN;
      if (Number.isNaN(expiresAt))
        throw fail(`printed an expirationTimestamp that is not a time: ${JSON.stringify(expiry)}`);
    }
    return {
      ...(token ? { token } : {}),
      ...(cert && key ? { clientCertificateData: cert, clientKeyData: key } : {}),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
  }
}
