// Makes the self-signed certificate of the API port when it serves HTTPS: kubectl sends a bearer token only over TLS.

import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export interface ServingCertificate {
  /** PEM of the certificate; it is its own CA (the kubeconfig's certificate-authority-data). */
  readonly cert: string;
  readonly key: string;
}

/**
 * A fresh P-256 key and a self-signed certificate for `host` (plus 127.0.0.1 and localhost), valid 30 days, made
 * with the openssl command line in a private temporary directory under `dir` that is removed at once. Why TLS at
 * all: kubectl's clientcmd reads a kubeconfig user's credentials only when the server is https, so over plain
 * http a ServiceAccount kubeconfig would send no token and be served as the admin.
 */
export async function makeServingCertificate(
  dir: string,
  host: string,
  openssl = "openssl",
): Promise<ServingCertificate> {
  const work = await mkdtemp(join(dir, "tls-"));
  try {
    const names = new Set(["IP:127.0.0.1", "DNS:localhost", isIP(host) ? `IP:${host}` : `DNS:${host}`]);
    await execFileAsync(openssl, [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(work, "key.pem"),
      "-out",
      join(work, "cert.pem"),
      "-days",
      "30",
      "-subj",
      "/CN=knotless-local-cluster",
      "-addext",
      `subjectAltName=${[...names].join(",")}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,digitalSignature,keyCertSign",
      "-addext",
      "extendedKeyUsage=serverAuth",
    ]).catch((e: NodeJS.ErrnoException & { stderr?: string }) => {
      throw new Error(
        `the local cluster's TLS certificate could not be made with ${openssl}: ${e.code === "ENOENT" ? "openssl is not installed" : (e.stderr ?? e.message).trim()}`,
      );
    });
    const [cert, key] = await Promise.all([
      readFile(join(work, "cert.pem"), "utf8"),
      readFile(join(work, "key.pem"), "utf8"),
    ]);
    return { cert, key };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
