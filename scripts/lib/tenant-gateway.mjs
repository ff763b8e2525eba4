// scripts/tenant-kubeconfig.sh's node half: checks the sign-in's output, drives the gateway, writes the kubeconfig 0600.
// The interface it assumes is stated once, at the top of scripts/tenant-kubeconfig.sh and in docs/live-proof.md; keep them in step.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { collectCredentialSecrets, maskText } from "./mask-secrets.mjs";

/** The exit codes scripts/tenant-kubeconfig.sh documents. */
export const EXIT = { usage: 2, signin: 4, gateway: 5, timeout: 6 };

const REQUEST_TIMEOUT_MS = 30_000;
const TRIES = 3;
const RETRY_DELAY_MS = 2_000;

/** A failure with the script's exit code and a message that names the expectation that failed. */
export class KitError extends Error {
  constructor(exitCode, message) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** `90s`, `15m`, `1h`, `0.5s`, `300` (seconds) in milliseconds; the same grammar the shell script checks. */
export function parseDuration(flag, text) {
  const match = /^(\d+(?:\.\d+)?)([smh]?)$/.exec(text ?? "");
  if (!match) throw new KitError(EXIT.usage, `${flag} expects a duration such as 90s, 15m or 1h (got "${text}")`);
  return Number(match[1]) * { "": 1000, s: 1000, m: 60_000, h: 3_600_000 }[match[2]];
}

/**
 * The session token from what oauth-signin.ts printed on stdout: exactly one JSON object with a non-empty
 * `sessionToken` string. Nothing of stdout is ever quoted in an error: it may be the secret itself.
 */
export function readSessionToken(stdoutPath) {
  const text = readFileSync(stdoutPath, "utf8");
  const expected = 'expected one JSON object with a non-empty "sessionToken" string';
  if (text.trim() === "")
    throw new KitError(EXIT.signin, `oauth-signin.ts exited 0 but printed nothing on stdout (${expected})`);
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new KitError(
      EXIT.signin,
      `oauth-signin.ts printed ${Buffer.byteLength(text)} bytes on stdout that are not JSON (${expected}; not shown, it may hold a secret)`,
    );
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new KitError(EXIT.signin, `oauth-signin.ts printed JSON that is not an object (${expected})`);
  }
  const token = parsed.sessionToken;
  if (typeof token !== "string" || token.trim() === "") {
    const keys = Object.keys(parsed);
    throw new KitError(
      EXIT.signin,
      `oauth-signin.ts printed a JSON object without a non-empty "sessionToken" string (${expected}; its keys: ${keys.length ? keys.join(", ") : "none"})`,
    );
  }
  if (/[\r\n]/.test(token))
    throw new KitError(
      EXIT.signin,
      'oauth-signin.ts printed a "sessionToken" with a line break in it (expected a single-line opaque token)',
    );
  return token;
}

/** The values to mask in anything shown: the credential file's and the session token (or all of stdout, if it was not the JSON expected). */
export function collectSigninSecrets(credentialsPath, stdoutPath) {
  const secrets = collectCredentialSecrets(credentialsPath);
  if (stdoutPath) {
    let text = "";
    try {
      text = readFileSync(stdoutPath, "utf8");
    } catch {
      // no stdout file yet
    }
    try {
      const token = JSON.parse(text)?.sessionToken;
      if (typeof token === "string") secrets.push(token);
    } catch {
      if (text.trim()) secrets.push(text.trim(), ...text.split(/\s+/).filter(Boolean));
    }
  }
  return secrets;
}

/** The gateway's JSON API as docs/live-proof.md states it, with the session as a bearer token. */
export class TenantGateway {
  constructor({ url, token, secrets, log, fetchImpl = fetch, sleep = defaultSleep }) {
    this.url = url.replace(/\/+$/, "");
    this.token = token;
    this.secrets = [...secrets, token];
    this.log = log;
    this.fetch = fetchImpl;
    this.sleep = sleep;
  }

  /** The cluster object, or undefined when the gateway answers 404. */
  async getCluster(name) {
    const path = `/v1/clusters/${encodeURIComponent(name)}`;
    const response = await this.call("GET", path);
    if (response.status === 404) return undefined;
    this.requireStatus(
      response,
      "GET",
      path,
      [200],
      '200 with {"name", "status"}, or 404 when there is no such cluster',
    );
    return this.readCluster(response, "GET", path, name);
  }

  /** Asks for the cluster; one that exists already (409) is read back instead. */
  async createCluster(name) {
    const path = "/v1/clusters";
    const response = await this.call("POST", path, { name });
    if (response.status === 409) {
      this.log(`cluster ${name} was created meanwhile (HTTP 409); reusing it`);
      const cluster = await this.getCluster(name);
      if (!cluster)
        throw new KitError(
          EXIT.gateway,
          `POST ${path} answered 409 (exists) but GET /v1/clusters/${name} answered 404`,
        );
      return cluster;
    }
    this.requireStatus(
      response,
      "POST",
      path,
      [200, 201, 202],
      '200, 201 or 202 with {"name", "status"}, or 409 when it exists',
    );
    return this.readCluster(response, "POST", path, name);
  }

  /** Polls until the cluster says Ready; Failed ends it at once, and so does the deadline (exit 6). */
  async waitUntilReady(name, first, { timeoutMs, intervalMs }) {
    const deadline = Date.now() + timeoutMs;
    const started = Date.now();
    let cluster = first;
    let shown;
    for (;;) {
      const line = `${cluster.status}${typeof cluster.message === "string" && cluster.message ? ` (${this.mask(cluster.message)})` : ""}`;
      if (line !== shown) {
        this.log(`cluster ${name}: ${line} after ${formatSeconds(Date.now() - started)}`);
        shown = line;
      }
      if (cluster.status === "Ready") return cluster;
      if (cluster.status === "Failed")
        throw new KitError(
          EXIT.gateway,
          `cluster ${name} reports Failed${cluster.message ? `: ${this.mask(String(cluster.message))}` : ""}`,
        );
      if (Date.now() + intervalMs > deadline) {
        throw new KitError(
          EXIT.timeout,
          `cluster ${name} was not Ready within ${formatSeconds(timeoutMs)} (last status: ${line}); raise --ready-timeout, or run again to reuse it`,
        );
      }
      await this.sleep(intervalMs);
      const next = await this.getCluster(name);
      if (!next)
        throw new KitError(EXIT.gateway, `cluster ${name} disappeared while waiting for Ready (GET answered 404)`);
      cluster = next;
    }
  }

  /** The kubeconfig text, checked to be one (never quoted: it holds the cluster-admin key). */
  async getKubeconfig(name) {
    const path = `/v1/clusters/${encodeURIComponent(name)}/kubeconfig`;
    const response = await this.call("GET", path);
    const expected = '200 with {"kubeconfig": "<kubeconfig text>"}';
    this.requireStatus(response, "GET", path, [200], expected);
    const body = parseJsonBody(response, "GET", path, expected);
    if (
      body === null ||
      typeof body !== "object" ||
      typeof body.kubeconfig !== "string" ||
      body.kubeconfig.trim() === ""
    ) {
      throw new KitError(
        EXIT.gateway,
        `GET ${path}: the answer has no non-empty "kubeconfig" string (expected ${expected})`,
      );
    }
    const problem = describeNotKubeconfig(body.kubeconfig);
    if (problem)
      throw new KitError(
        EXIT.gateway,
        `GET ${path}: the "kubeconfig" field is not a kubeconfig: ${problem} (not shown, it holds a key)`,
      );
    return body.kubeconfig;
  }

  /** One request, retried on network errors and 5xx; 3xx is refused (a redirect would carry the token elsewhere). */
  async call(method, path, body) {
    let last = "";
    for (let attempt = 1; attempt <= TRIES; attempt += 1) {
      try {
        const response = await this.fetch(`${this.url}${path}`, {
          method,
          redirect: "manual",
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: "application/json",
            ...(body ? { "content-type": "application/json" } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text();
        if (response.status < 500) return { status: response.status, text };
        last = `HTTP ${response.status}${excerpt(this.mask(text))}`;
      } catch (error) {
        last = `cannot reach the gateway at ${this.url}: ${describeFetchError(error)}`;
      }
      if (attempt < TRIES) {
        this.log(`${method} ${path}: ${last}; trying again`);
        await this.sleep(RETRY_DELAY_MS);
      }
    }
    throw new KitError(EXIT.gateway, `${method} ${path}: ${last} (${TRIES} tries)`);
  }

  requireStatus(response, method, path, accepted, expected) {
    if (accepted.includes(response.status)) return;
    if (response.status === 401 || response.status === 403) {
      throw new KitError(
        EXIT.gateway,
        `${method} ${path}: the gateway refused the session (HTTP ${response.status}); sign in again, and check that --gateway names the gateway the credentials are for`,
      );
    }
    throw new KitError(
      EXIT.gateway,
      `${method} ${path}: HTTP ${response.status}${excerpt(this.mask(response.text))} (expected ${expected})`,
    );
  }

  readCluster(response, method, path, name) {
    const expected = '{"name": "<name>", "status": "<status>"}';
    const body = parseJsonBody(response, method, path, expected);
    if (body === null || typeof body !== "object" || Array.isArray(body))
      throw new KitError(EXIT.gateway, `${method} ${path}: the answer is not a JSON object (expected ${expected})`);
    if (typeof body.status !== "string" || body.status === "")
      throw new KitError(EXIT.gateway, `${method} ${path}: the answer has no "status" string (expected ${expected})`);
    if (body.name !== undefined && body.name !== name)
      throw new KitError(
        EXIT.gateway,
        `${method} ${path}: the answer names cluster "${this.mask(String(body.name))}", not "${name}"`,
      );
    return body;
  }

  mask(text) {
    return maskText(text, this.secrets);
  }
}

/** What makes `text` not a kubeconfig, or undefined when it looks like one (YAML or JSON: kind Config, a cluster with a server, users). */
export function describeNotKubeconfig(text) {
  if (text.trimStart().startsWith("{")) {
    let config;
    try {
      config = JSON.parse(text);
    } catch {
      return "it starts with { but is not JSON";
    }
    if (config.kind !== "Config") return 'no "kind": "Config"';
    if (!Array.isArray(config.clusters) || !config.clusters.some((c) => typeof c?.cluster?.server === "string"))
      return "no cluster with a server";
    if (!Array.isArray(config.users)) return "no users";
    return undefined;
  }
  if (!/^kind:\s*["']?Config["']?\s*$/m.test(text)) return 'no "kind: Config" line';
  if (!/^clusters:/m.test(text) || !/^\s*(?:-\s+)?server:\s*\S+/m.test(text)) return "no cluster with a server";
  if (!/^users:/m.test(text)) return "no users";
  return undefined;
}

/** Writes `text` to `path` mode 0600 through a private temp file in the same directory, so a reader never sees half of it. */
export function writePrivateFile(path, text) {
  const temp = `${path}.tmp-${process.pid}`;
  rmSync(temp, { force: true });
  const fd = openSync(temp, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

function parseJsonBody(response, method, path, expected) {
  try {
    return JSON.parse(response.text);
  } catch {
    throw new KitError(
      EXIT.gateway,
      `${method} ${path}: HTTP ${response.status} with a body that is not JSON (expected ${expected})`,
    );
  }
}

function excerpt(text) {
  const line = text.replace(/\s+/g, " ").trim();
  if (!line) return "";
  return `: ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`;
}

function describeFetchError(error) {
  const cause = error?.cause;
  if (error?.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000}s`;
  return cause?.code ?? cause?.message ?? error?.message ?? String(error);
}

function formatSeconds(ms) {
  return `${Math.round(ms / 100) / 10}s`;
}

function defaultSleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `fetch`: sign-in output → cluster created or reused → Ready → kubeconfig written 0600. */
async function runFetch(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      "signin-stdout": { type: "string" },
      credentials: { type: "string" },
      gateway: { type: "string" },
      cluster: { type: "string" },
      out: { type: "string" },
      "ready-timeout": { type: "string" },
      "poll-interval": { type: "string" },
      "no-create": { type: "boolean", default: false },
    },
  });
  for (const flag of ["signin-stdout", "credentials", "gateway", "cluster", "out", "ready-timeout", "poll-interval"]) {
    if (!values[flag]) throw new KitError(EXIT.usage, `tenant-gateway.mjs fetch: --${flag} is required`);
  }
  const timeoutMs = parseDuration("--ready-timeout", values["ready-timeout"]);
  const intervalMs = parseDuration("--poll-interval", values["poll-interval"]);
  const log = (message) => process.stderr.write(`tenant-kubeconfig: ${message}\n`);
  const token = readSessionToken(values["signin-stdout"]);
  const gateway = new TenantGateway({
    url: values.gateway,
    token,
    secrets: collectCredentialSecrets(values.credentials),
    log,
  });
  const name = values.cluster;
  let cluster = await gateway.getCluster(name);
  if (cluster) log(`reusing tenant cluster ${name} (status ${cluster.status})`);
  else if (values["no-create"])
    throw new KitError(
      EXIT.gateway,
      `tenant cluster ${name} does not exist (GET answered 404) and --no-create was given`,
    );
  else {
    log(`creating tenant cluster ${name}`);
    cluster = await gateway.createCluster(name);
  }
  await gateway.waitUntilReady(name, cluster, { timeoutMs, intervalMs });
  const kubeconfig = await gateway.getKubeconfig(name);
  writePrivateFile(values.out, kubeconfig);
  log(`wrote ${basename(values.out)} (mode 0600)`);
}

/** `show-masked`: the last lines of a file the sign-in wrote, every credential value and token masked. */
function runShowMasked(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: "string" },
      credentials: { type: "string" },
      "signin-stdout": { type: "string" },
      lines: { type: "string", default: "20" },
    },
  });
  if (!values.file || !values.credentials)
    throw new KitError(EXIT.usage, "tenant-gateway.mjs show-masked: --file and --credentials are required");
  const secrets = collectSigninSecrets(values.credentials, values["signin-stdout"]);
  const lines = maskText(readFileSync(values.file, "utf8"), secrets)
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "");
  for (const line of lines.slice(-Number(values.lines))) process.stderr.write(`  | ${line}\n`);
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === "fetch") return runFetch(rest);
  if (command === "show-masked") return runShowMasked(rest);
  throw new KitError(EXIT.usage, `tenant-gateway.mjs: unknown command "${command ?? ""}" (fetch or show-masked)`);
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(
        `tenant-kubeconfig: ${error instanceof KitError ? error.message : `internal error: ${error?.stack ?? error}`}\n`,
      );
      process.exit(error instanceof KitError ? error.exitCode : 1);
    },
  );
}
