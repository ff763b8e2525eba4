// A git smart-HTTP server for tests (`git http-backend` behind node's http server), since the service clones only http(s) URLs.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHttpServer {
  /** `http://HOST:PORT`: a repository `<base>/x.git` is at `${url}/x.git`. */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Serves every repository under `base` at a free port, named by `host` in its URL (default 127.0.0.1); a host other
 * than loopback listens on every address, as a pod network's gateway may come and go with its containers.
 */
export async function startGitHttpServer(base: string, host = "127.0.0.1"): Promise<GitHttpServer> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const child = spawn("git", ["http-backend"], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: base,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        GIT_PROTOCOL: String(req.headers["git-protocol"] ?? ""),
        REMOTE_ADDR: "127.0.0.1",
      },
      stdio: ["pipe", "pipe", "ignore"],
    });
    req.pipe(child.stdin);
    // CGI: headers, a blank line, then the body.
    let head = Buffer.alloc(0);
    let headerDone = false;
    child.stdout.on("data", (chunk: Buffer) => {
      if (headerDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headerDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === "status") status = Number(value.split(" ")[0]);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    child.on("close", () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, host === "127.0.0.1" ? host : "0.0.0.0", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
