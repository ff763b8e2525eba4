// A stand-in of the tenant gateway on 127.0.0.1, speaking the JSON API docs/live-proof.md assumes; scripted, and records every request.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type GatewayMisbehaviour =
  | "cluster-not-json"
  | "cluster-no-status"
  | "cluster-wrong-name"
  | "kubeconfig-missing"
  | "kubeconfig-not-a-kubeconfig"
  | "refuse-session"
  | "create-conflict"
  | "server-error-once";

export interface FakeGatewayOptions {
  /** The bearer token a request must carry; others get 401. */
  readonly token: string;
  /** The kubeconfig text handed out for a Ready cluster. */
  readonly kubeconfig: string;
  /** Clusters that exist before the run: the statuses their GETs return in turn (the last one repeats). */
  readonly existing?: Readonly<Record<string, readonly string[]>>;
  /** The statuses a cluster created by POST reports in turn, POST's own answer first (the last one repeats). */
  readonly afterCreate?: readonly string[];
  /** The `message` field sent with every cluster object. */
  readonly message?: string;
  readonly misbehave?: GatewayMisbehaviour;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** The request carried `Authorization: Bearer <token>` (the value itself is never recorded). */
  readonly authorized: boolean;
  readonly accept: string | undefined;
  readonly body: string;
}

export interface FakeGateway {
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts the gateway on a free port of 127.0.0.1. */
export async function startFakeGateway(options: FakeGatewayOptions): Promise<FakeGateway> {
  const requests: RecordedRequest[] = [];
  const clusters = new Map<string, { statuses: readonly string[]; reads: number }>();
  for (const [name, statuses] of Object.entries(options.existing ?? {})) clusters.set(name, { statuses, reads: 0 });
  let serverErrorSent = false;

  const answer = (response: ServerResponse, status: number, body: unknown): void => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    response
      .writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" })
      .end(text);
  };
  const clusterObject = (
    name: string,
    cluster: { statuses: readonly string[]; reads: number },
  ): Record<string, unknown> => {
    const status = cluster.statuses[Math.min(cluster.reads, cluster.statuses.length - 1)] ?? "Ready";
    cluster.reads += 1;
    if (options.misbehave === "cluster-no-status") return { name, phase: status };
    if (options.misbehave === "cluster-wrong-name") return { name: `${name}-other`, status };
    return { name, status, ...(options.message ? { message: options.message } : {}) };
  };

  const handle = (request: IncomingMessage, body: string, response: ServerResponse): void => {
    const path = new URL(request.url ?? "/", "http://gateway").pathname;
    const authorized = request.headers.authorization === `Bearer ${options.token}`;
    requests.push({ method: request.method ?? "", path, authorized, accept: request.headers.accept, body });
    if (!authorized || options.misbehave === "refuse-session") return answer(response, 401, { error: "unauthorized" });
    if (options.misbehave === "server-error-once" && !serverErrorSent) {
      serverErrorSent = true;
      return answer(response, 503, "try again later");
    }
    const kubeconfigMatch = /^\/v1\/clusters\/([a-z0-9-]+)\/kubeconfig$/.exec(path);
    const clusterMatch = /^\/v1\/clusters\/([a-z0-9-]+)$/.exec(path);
    if (request.method === "GET" && kubeconfigMatch) {
      const cluster = clusters.get(kubeconfigMatch[1]!);
      if (!cluster) return answer(response, 404, { error: "no such cluster" });
      if (options.misbehave === "kubeconfig-missing") return answer(response, 200, { config: options.kubeconfig });
      if (options.misbehave === "kubeconfig-not-a-kubeconfig")
        return answer(response, 200, { kubeconfig: "hello: world\n" });
      return answer(response, 200, { kubeconfig: options.kubeconfig });
    }
    if (request.method === "GET" && clusterMatch) {
      const cluster = clusters.get(clusterMatch[1]!);
      if (!cluster) return answer(response, 404, { error: "no such cluster" });
      if (options.misbehave === "cluster-not-json") return answer(response, 200, "<html>gateway</html>");
      return answer(response, 200, clusterObject(clusterMatch[1]!, cluster));
    }
    if (request.method === "POST" && path === "/v1/clusters") {
      const name = (JSON.parse(body || "{}") as { name?: string }).name ?? "";
      if (clusters.has(name)) return answer(response, 409, { error: "exists" });
      const cluster = { statuses: options.afterCreate ?? ["Ready"], reads: 0 };
      clusters.set(name, cluster);
      if (options.misbehave === "create-conflict") return answer(response, 409, { error: "exists" });
      return answer(response, 201, clusterObject(name, cluster));
    }
    return answer(response, 404, { error: "no such route" });
  };

  const server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    request.on("end", () => handle(request, body, response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
