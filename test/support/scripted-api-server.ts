// A plain-HTTP server on a free port answering as `handle` says, with an ApiClient of namespace "ci" pointed at it; both closed after the file's tests.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after } from "node:test";
import { ApiClient } from "../../src/cluster/api/api-client.js";

export async function startScriptedApiServer(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ readonly server: Server; readonly client: ApiClient }> {
  const server = createServer(handle);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = new ApiClient({
    kubeconfig: {
      contextName: "x",
      namespace: "ci",
      server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      tls: { insecureSkipVerify: false },
      clusterName: "c",
      userName: "u",
      auth: { kind: "none" },
    },
    env: {},
  });
  after(async () => {
    await client.close();
    server.closeAllConnections();
    server.close();
  });
  return { server, client };
}
