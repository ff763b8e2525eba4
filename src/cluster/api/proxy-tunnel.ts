// Opens a CONNECT tunnel through a kubeconfig's http(s) proxy-url, for every connection of the API transport (requests and exec).
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { UnavailableError } from "../errors.js";

/**
 * Asks the proxy at `proxyUrl` for a tunnel to `target` (host:port) and resolves with the tunnel's socket, ready for
 * TLS to the API server. User info in the proxy URL is sent as Proxy-Authorization (basic). A proxy that refuses, or
 * cannot be reached within `timeoutMs`, is UnavailableError `unreachable` (the exec did not start).
 */
export function openProxyTunnel(
  proxyUrl: string,
  target: { host: string; port: number },
  timeoutMs: number,
): Promise<Socket> {
  const proxy = new URL(proxyUrl);
  const request = proxy.protocol === "https:" ? httpsRequest : httpRequest;
  const authority = `${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
  const auth = proxy.username
    ? {
        "Proxy-Authorization": `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}`,
      }
    : {};
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.hostname,
      port: proxy.port || (proxy.protocol === "https:" ? 443 : 80),
      method: "CONNECT",
      path: authority,
      headers: { Host: authority, ...auth },
      timeout: timeoutMs,
    });
    req.on("connect", (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(
        new UnavailableError(
          "unreachable",
          `the proxy ${proxy.host} refused a tunnel to ${authority}: HTTP ${res.statusCode}`,
        ),
      );
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (error: Error) =>
      reject(new UnavailableError("unreachable", `the proxy ${proxy.host} could not be reached: ${error.message}`)),
    );
    req.end();
  });
}
