// The `services:` key: our list of service containers beside the steps (or Tangled's NixOS services map, refused).
import { DNS_LABEL, IMAGE } from "../core/patterns.js";
import { formatDuration } from "../core/duration.js";
import {
  allowEmpty,
  field,
  readDurationMs,
  readList,
  readMap,
  readMatching,
  readNonEmptyText,
  readText,
  type FieldReader,
  type MapSchema,
} from "./field-readers.js";
import { readEnvironment } from "./environment-schema.js";
import { readServices as readNixosServices } from "./machine-schema.js";
import {
  describeNode,
  indexPath,
  isMapNode,
  isScalarNode,
  isSeqNode,
  positionOf,
  readScalarText,
  reportError,
  resolveAlias,
} from "./read-context.js";
import type { ServiceReadiness, SourcePosition, WorkflowService } from "./workflow-types.js";

/** Most services a workflow may have: each is a container in the run's pod. */
export const MAX_SERVICES = 8;
/** How long a service may take to become ready when its `readiness` names no timeout. */
export const DEFAULT_READINESS_TIMEOUT_MS = 60_000;
/** The longest readiness timeout: a service that is not up in 30 minutes will not be. */
export const MAX_READINESS_TIMEOUT_MS = 30 * 60_000;
/** Names the runner's own containers have in the run's pod (src/manifests/names.ts, src/pod/docker-daemon.ts). */
export const RESERVED_SERVICE_NAMES: readonly string[] = ["run", "docker"];

/** A TCP port, 1 to 65535, written as a YAML integer. */
const readPort: FieldReader<number> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  if (
    isScalarNode(ctx, resolved) &&
    typeof resolved.value === "number" &&
    Number.isInteger(resolved.value) &&
    resolved.value >= 1 &&
    resolved.value <= 65535
  )
    return resolved.value;
  const text = readScalarText(ctx, resolved);
  reportError(
    ctx,
    at,
    path,
    `expected a port, a whole number from 1 to 65535, found ${text === undefined ? describeNode(ctx, resolved) : JSON.stringify(text)}`,
  );
  return undefined;
};

/** `ports`: distinct ports, such as [5432]. */
const readPorts: FieldReader<number[]> = (ctx, node, at, path) => {
  const ports = readList(ctx, node, at, path, "a list of ports such as [5432]", readPort);
  if (ports === undefined) return undefined;
  const twice = ports.find((port, index) => ports.indexOf(port) !== index);
  if (twice === undefined) return ports;
  reportError(ctx, at, path, `lists the port ${twice} twice`);
  return undefined;
};

/** `command`/`args`/`readiness.exec`: a list of words, passed as they are (no shell). */
const readWords: FieldReader<string[]> = (ctx, node, at, path) => {
  if (!isSeqNode(ctx, resolveAlias(ctx, node))) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of words such as [postgres, -c, fsync=off] (no shell runs them), found ${describeNode(ctx, resolveAlias(ctx, node))}`,
    );
    return undefined;
  }
  return readList(ctx, node, at, path, "a list of words", readText);
};

const readCommandWords: FieldReader<string[]> = (ctx, node, at, path) => {
  const words = readWords(ctx, node, at, path);
  if (words === undefined) return undefined;
  if (words.length > 0 && words[0]!.trim() !== "") return words;
  reportError(ctx, at, path, "expected a command as the first word, found nothing");
  return undefined;
};

const readServiceName: FieldReader<string> = (ctx, node, at, path) => {
  const name = readNonEmptyText(ctx, node, at, path);
  if (name === undefined) return undefined;
  if (!DNS_LABEL.test(name)) {
    reportError(
      ctx,
      at,
      path,
      `expected a name of lowercase letters, digits and \`-\`, at most 63 characters, starting and ending with a letter or digit (it names the service's container), found ${JSON.stringify(name)}`,
    );
    return undefined;
  }
  if (RESERVED_SERVICE_NAMES.includes(name)) {
    reportError(
      ctx,
      at,
      path,
      `${JSON.stringify(name)} is the name of one of the runner's own containers in the pod (${RESERVED_SERVICE_NAMES.join(", ")}); choose another`,
    );
    return undefined;
  }
  return name;
};

const READINESS_KEYS = {
  tcp: field(readPort),
  exec: field(readCommandWords),
  timeout: field(readDurationMs),
} satisfies MapSchema;

const READINESS_EXAMPLE = "{tcp: 5432, timeout: 60s} or {exec: [pg_isready, -h, 127.0.0.1]}";

/** What `readiness` said, with where its `tcp` stands (checked against `ports` once the service is read). */
type ParsedReadiness = {
  readonly readiness: ServiceReadiness;
  readonly timeoutMs: number;
  readonly tcpAt?: SourcePosition;
};

/** `readiness`: exactly one of `tcp: PORT` (a connection succeeds) and `exec: [...]` (exits 0 in the service's container). */
const readReadiness: FieldReader<ParsedReadiness> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, READINESS_KEYS, `a readiness check such as ${READINESS_EXAMPLE}`);
  if (read === undefined) return undefined;
  const { tcp, exec, timeout } = read.values;
  const keys = read.keys;
  if (keys.tcp !== undefined && keys.exec !== undefined) {
    reportError(ctx, keys.exec, `${path}.exec`, "expected one check, `tcp` or `exec`, found both");
    return undefined;
  }
  if (keys.tcp === undefined && keys.exec === undefined) {
    reportError(
      ctx,
      read.position,
      path,
      `expected a check, \`tcp: PORT\` or \`exec: [...]\`, found neither; such as ${READINESS_EXAMPLE}`,
    );
    return undefined;
  }
  if (timeout !== undefined && timeout > MAX_READINESS_TIMEOUT_MS) {
    reportError(
      ctx,
      read.valuesAt.timeout ?? read.position,
      `${path}.timeout`,
      `expected a readiness timeout of at most ${formatDuration(MAX_READINESS_TIMEOUT_MS)}, found ${formatDuration(timeout)}`,
    );
    return undefined;
  }
  if (timeout === 0) {
    reportError(
      ctx,
      read.valuesAt.timeout ?? read.position,
      `${path}.timeout`,
      "expected a readiness timeout longer than 0s",
    );
    return undefined;
  }
  const timeoutMs = timeout ?? DEFAULT_READINESS_TIMEOUT_MS;
  if (tcp !== undefined)
    return { readiness: { kind: "tcp", port: tcp }, timeoutMs, tcpAt: read.valuesAt.tcp ?? read.position };
  if (exec !== undefined) return { readiness: { kind: "exec", command: exec }, timeoutMs };
  return undefined;
};

const SERVICE_KEYS = {
  name: field(readServiceName, { required: true }),
  image: field(readMatching(IMAGE, "an image reference such as postgres:16"), { required: true }),
  environment: field(allowEmpty(readEnvironment)),
  command: field(readCommandWords),
  args: field(readWords),
  ports: field(readPorts),
  readiness: field(readReadiness),
} satisfies MapSchema;

const SERVICE_EXAMPLE = "{name: postgres, image: postgres:16, ports: [5432], readiness: {tcp: 5432}}";

/**
 * Our `services:` list: at most MAX_SERVICES, names distinct DNS labels, ports distinct across services (they all
 * listen on the pod's one loopback), a `readiness.tcp` port one of the service's `ports`.
 */
export const readServiceList: FieldReader<WorkflowService[]> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of services such as - ${SERVICE_EXAMPLE}, found ${describeNode(ctx, list)}`,
    );
    return undefined;
  }
  if (list.items.length > MAX_SERVICES)
    reportError(ctx, at, path, `expected at most ${MAX_SERVICES} services, found ${list.items.length}`);
  const services: WorkflowService[] = [];
  const named = new Map<string, { path: string; at: SourcePosition }>();
  const ported = new Map<number, string>();
  list.items.forEach((item, index) => {
    const servicePath = indexPath(path, index);
    const read = readMap(
      ctx,
      item,
      positionOf(ctx, item) ?? at,
      servicePath,
      SERVICE_KEYS,
      `a service such as ${SERVICE_EXAMPLE}`,
    );
    if (read === undefined) return;
    const { name, image, environment, command, args, ports, readiness } = read.values;
    let failed = false;
    if (name !== undefined) {
      const nameAt = read.valuesAt.name ?? read.position;
      const first = named.get(name);
      if (first !== undefined) {
        reportError(
          ctx,
          nameAt,
          `${servicePath}.name`,
          `duplicate service name ${JSON.stringify(name)}, already used by ${first.path} at ${ctx.file}:${first.at.line}:${first.at.column}; each service is a container of that name`,
        );
        failed = true;
      } else named.set(name, { path: servicePath, at: nameAt });
    }
    for (const port of ports ?? []) {
      const owner = ported.get(port);
      if (owner !== undefined) {
        reportError(
          ctx,
          read.valuesAt.ports ?? read.position,
          `${servicePath}.ports`,
          `the port ${port} is already the service ${owner}'s; services share the pod's localhost, so each port can be one service's only`,
        );
        failed = true;
      } else if (name !== undefined) ported.set(port, name);
    }
    if (readiness?.readiness.kind === "tcp" && !(ports ?? []).includes(readiness.readiness.port)) {
      const listed =
        ports === undefined || ports.length === 0 ? "it lists no `ports`" : `its ports are ${ports.join(", ")}`;
      reportError(
        ctx,
        readiness.tcpAt ?? read.position,
        `${servicePath}.readiness.tcp`,
        `the port ${readiness.readiness.port} is not one of the service's ports (${listed}); list it under \`ports\``,
      );
      failed = true;
    }
    if (failed || name === undefined || image === undefined) return;
    services.push({
      name,
      image,
      imagePosition: read.valuesAt.image ?? read.position,
      environment: environment ?? [],
      ...(command !== undefined ? { command } : {}),
      ...(args !== undefined ? { args } : {}),
      ports: ports ?? [],
      ...(readiness !== undefined ? { readiness: readiness.readiness } : {}),
      readinessTimeoutMs: readiness?.timeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS,
      position: read.position,
    });
  });
  return services;
};

/** `services`: a list is ours (service containers); a map is Tangled's NixOS services, refused by name. */
export const readServicesKey: FieldReader<WorkflowService[]> = (ctx, node, at, path) => {
  if (isMapNode(ctx, resolveAlias(ctx, node)))
    return readNixosServices(ctx, node, at, path) === undefined ? undefined : [];
  return readServiceList(ctx, node, at, path);
};
