// A small HTTP CONNECT proxy on loopback for the API transport's proxy-url tests: it records each tunnel's target.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect } from "node:net";
import type { Duplex } from "node:stream";

export interface ConnectProxy {
  readonly server: Server;
  /** `http://127.0.0.1:PORT`, for a kubeconfig's proxy-url. */
  readonly url: string;
  /** The `host:port` of every tunnel opened, in order. */
  readonly tunnels: string[];
}

/** Starts a proxy that tunnels every CONNECT to its target; close `server` when done. */
export async function startConnectProxy(): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const server = createServer();
  server.on("connect", (req: IncomingMessage, client: Duplex) => {
    tunnels.push(String(req.url));
    const [host, port] = String(req.url).split(":");
    const upstream = connect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, tunnels };
}
