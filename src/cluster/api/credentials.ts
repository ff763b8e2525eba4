// The credential of a request, whatever the kubeconfig's user holds: none, token, tokenFile, basic, exec plugin.
import { createHash } from "node:crypto";
import { ExecCredentialSource, type ExecCredential } from "./exec-credential.js";
import type { ResolvedKubeconfig } from "./kubeconfig.js";
import { TokenFileSource } from "./token-file.js";

/** What one request authenticates with. `tlsKey` names the TLS identity (the pool a request may share). */
export interface Identity {
  readonly authorization?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly tlsKey: string;
  /** The exec credential it came from, to invalidate after a 401. */
  readonly execCredential?: ExecCredential;
}

/** Hands every request the current identity; after a 401, `refused` refreshes what can be refreshed. */
export class Credentials {
  private readonly exec: ExecCredentialSource | undefined;
  private readonly tokenFile: TokenFileSource | undefined;
  private readonly staticIdentity: Identity | undefined;
  private last: Identity | undefined;

  constructor(
    private readonly kubeconfig: ResolvedKubeconfig,
    env: Readonly<Record<string, string | undefined>>,
  ) {
    const { auth, tls } = kubeconfig;
    if (auth.kind === "exec") {
      this.exec = new ExecCredentialSource(auth.plugin, {
        env,
        cluster: {
          server: kubeconfig.server,
          ...(tls.ca ? { certificateAuthorityData: Buffer.from(tls.ca).toString("base64") } : {}),
          ...(tls.insecureSkipVerify ? { insecureSkipTlsVerify: true } : {}),
          ...(tls.serverName ? { tlsServerName: tls.serverName } : {}),
        },
      });
    } else if (auth.kind === "token-file") {
      this.tokenFile = new TokenFileSource(auth.path);
    } else {
      const authorization =
        auth.kind === "token"
          ? `Bearer ${auth.token}`
          : auth.kind === "basic"
            ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`
            : undefined;
      this.staticIdentity = { ...(authorization ? { authorization } : {}), ...this.kubeconfigCert() };
    }
  }

  /** The identity for the next request (runs the exec plugin or reads the token file when due). */
  async current(): Promise<Identity> {
    if (this.staticIdentity) return this.staticIdentity;
    if (this.tokenFile)
      return (this.last = { authorization: `Bearer ${await this.tokenFile.get()}`, ...this.kubeconfigCert() });
    const credential = await this.exec!.get();
    const cert =
      credential.clientCertificateData && credential.clientKeyData
        ? {
            cert: credential.clientCertificateData,
            key: credential.clientKeyData,
            tlsKey: fingerprint(credential.clientCertificateData),
          }
        : this.kubeconfigCert();
    return (this.last = {
      ...(credential.token ? { authorization: `Bearer ${credential.token}` } : {}),
      ...cert,
      execCredential: credential,
    });
  }

  /** The identity without waiting (the crash path): a static one, else the last handed out, else undefined. */
  peek(): Identity | undefined {
    return this.staticIdentity ?? this.last;
  }

  /** After a 401 with `identity`: drops what may be stale; true when asking again may get a different credential. */
  refused(identity: Identity): boolean {
    if (this.exec && identity.execCredential) {
      this.exec.invalidate(identity.execCredential);
      return true;
    }
    if (this.tokenFile) {
      this.tokenFile.invalidate();
      return true;
    }
    return false;
  }

  private kubeconfigCert(): { cert?: string; key?: string; tlsKey: string } {
    const { cert, key } = this.kubeconfig.tls;
    return cert && key ? { cert, key, tlsKey: fingerprint(cert) } : { tlsKey: "anonymous" };
  }
}

function fingerprint(cert: string): string {
  return createHash("sha256").update(cert).digest("hex").slice(0, 16);
}
