// A TCP proxy that makes a local server look `rttMs` away: one round trip before it connects upstream, half a round trip per chunk and direction.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface LatencyProxy {
  readonly port: number;
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<port> to `target`; chunks keep their order (timers of one delay fire in order). */
export async function startLatencyProxy(target: { host: string; port: number }, rttMs: number): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const half = rttMs / 2;
  const server: Server = createServer((client) => {
    sockets.add(client);
    let upstream: Socket | undefined;
    const early: Buffer[] = [];
    let clientEnded = false;
    // Decided at arrival: before the upstream connection is up, a chunk waits in `early`, never in a timer too.
    client.on("data", (chunk: Buffer) => {
      const to = upstream;
      if (to) setTimeout(() => to.write(chunk), half);
      else early.push(chunk);
    });
    client.on("end", () => {
      const to = upstream;
      if (to) setTimeout(() => to.end(), half);
      else clientEnded = true;
    });
    client.on("error", () => upstream?.destroy());
    client.on("close", () => sockets.delete(client));
    // The client's SYN reached "the server" half a round trip ago; its connect returned after a whole one.
    setTimeout(() => {
      const up = connect(target.port, target.host);
      sockets.add(up);
      up.on("connect", () => {
        upstream = up;
        for (const chunk of early) setTimeout(() => up.write(chunk), half);
        if (clientEnded) setTimeout(() => up.end(), half);
      });
      up.on("error", () => client.destroy());
      up.on("close", () => {
        sockets.delete(up);
        setTimeout(() => client.destroy(), half);
      });
      up.on("data", (chunk: Buffer) => setTimeout(() => client.write(chunk), half));
      up.on("end", () => setTimeout(() => client.end(), half));
    }, rttMs);
  });
  server.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
