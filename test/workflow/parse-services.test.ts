import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseErrors, parseOk } from "./workflow-fixtures.js";

const STEPS = "steps:\n  - name: test\n    command: psql -h 127.0.0.1 -c 'select 1'\n";

describe("parseWorkflow on services:", () => {
  it("reads a service with its image, environment, command, args, ports and readiness, with defaults for the rest", () => {
    const workflow = parseOk(
      [
        "services:",
        "  - name: postgres",
        "    image: localhost/knotless-postgres:bookworm",
        "    environment:",
        "      PGDATA: /tmp/pg",
        "      PORT: 5432",
        "    command: [pg-start]",
        "    args: [-c, fsync=off]",
        "    ports: [5432]",
        "    readiness: {tcp: 5432, timeout: 90s}",
        "  - name: cache",
        "    image: redis:7",
        "    readiness:",
        "      exec: [redis-cli, ping]",
        STEPS,
      ].join("\n"),
    );
    const [postgres, cache] = workflow.services!;
    assert.deepEqual(postgres, {
      name: "postgres",
      image: "localhost/knotless-postgres:bookworm",
      imagePosition: { line: 3, column: 12 },
      environment: [
        { name: "PGDATA", value: "/tmp/pg" },
        { name: "PORT", value: "5432" },
      ],
      command: ["pg-start"],
      args: ["-c", "fsync=off"],
      ports: [5432],
      readiness: { kind: "tcp", port: 5432 },
      readinessTimeoutMs: 90_000,
      position: { line: 2, column: 5 },
    });
    assert.deepEqual(
      [cache!.readiness, cache!.readinessTimeoutMs, cache!.ports, cache!.environment, cache!.command],
      [{ kind: "exec", command: ["redis-cli", "ping"] }, 60_000, [], [], undefined],
    );
  });

  it("leaves services out of a workflow that has none, an empty list or an empty NixOS map", () => {
    for (const text of [STEPS, `services:\n${STEPS}`, `services: []\n${STEPS}`, `services: {}\n${STEPS}`])
      assert.equal(parseOk(text).services, undefined);
  });

  it("refuses duplicate names, names that are not DNS labels and the runner's own container names, each at its place", () => {
    const errors = parseErrors(
      [
        "services:",
        "  - {name: db, image: postgres:16}",
        "  - {name: db, image: postgres:16}",
        "  - {name: My_DB, image: postgres:16}",
        "  - {name: run, image: busybox}",
        STEPS,
      ].join("\n"),
    );
    assert.deepEqual(errors, [
      'wf.yml:3:12: services[1].name: duplicate service name "db", already used by services[0] at wf.yml:2:12; each service is a container of that name',
      'wf.yml:4:12: services[2].name: expected a name of lowercase letters, digits and `-`, at most 63 characters, starting and ending with a letter or digit (it names the service\'s container), found "My_DB"',
      'wf.yml:5:12: services[3].name: "run" is the name of one of the runner\'s own containers in the pod (run, docker); choose another',
    ]);
  });

  it("refuses bad ports, a port two services claim and a port listed twice", () => {
    const errors = parseErrors(
      [
        "services:",
        "  - {name: a, image: x, ports: [0, 70000, http]}",
        "  - {name: b, image: x, ports: [80, 80]}",
        "  - {name: c, image: x, ports: [5432]}",
        "  - {name: d, image: x, ports: [5432]}",
        STEPS,
      ].join("\n"),
    );
    assert.deepEqual(errors, [
      'wf.yml:2:33: services[0].ports[0]: expected a port, a whole number from 1 to 65535, found "0"',
      'wf.yml:2:36: services[0].ports[1]: expected a port, a whole number from 1 to 65535, found "70000"',
      'wf.yml:2:43: services[0].ports[2]: expected a port, a whole number from 1 to 65535, found "http"',
      "wf.yml:3:32: services[1].ports: lists the port 80 twice",
      "wf.yml:5:32: services[3].ports: the port 5432 is already the service c's; services share the pod's localhost, so each port can be one service's only",
    ]);
  });

  it("refuses a readiness check that is missing, doubled, empty, on a port the service does not list, or too long", () => {
    const errors = parseErrors(
      [
        "services:",
        "  - {name: a, image: x, ports: [1], readiness: {timeout: 10s}}",
        "  - {name: b, image: x, ports: [2], readiness: {tcp: 2, exec: [true]}}",
        "  - {name: c, image: x, ports: [3], readiness: {tcp: }}",
        "  - {name: d, image: x, readiness: {tcp: 5432}}",
        "  - {name: e, image: x, ports: [5], readiness: {tcp: 6}}",
        "  - {name: f, image: x, readiness: {exec: []}}",
        "  - {name: g, image: x, readiness: {exec: pg_isready}}",
        "  - {name: h, image: x, ports: [8], readiness: {tcp: 8, timeout: 2h}}",
        STEPS,
      ].join("\n"),
    );
    assert.deepEqual(errors, [
      "wf.yml:2:48: services[0].readiness: expected a check, `tcp: PORT` or `exec: [...]`, found neither; such as {tcp: 5432, timeout: 60s} or {exec: [pg_isready, -h, 127.0.0.1]}",
      "wf.yml:3:57: services[1].readiness.exec: expected one check, `tcp` or `exec`, found both",
      "wf.yml:4:49: services[2].readiness.tcp: expected a port, a whole number from 1 to 65535, found nothing",
      "wf.yml:5:42: services[3].readiness.tcp: the port 5432 is not one of the service's ports (it lists no `ports`); list it under `ports`",
      "wf.yml:6:54: services[4].readiness.tcp: the port 6 is not one of the service's ports (its ports are 5); list it under `ports`",
      "wf.yml:7:43: services[5].readiness.exec: expected a command as the first word, found nothing",
      "wf.yml:8:43: services[6].readiness.exec: expected a list of words such as [postgres, -c, fsync=off] (no shell runs them), found a string",
      "wf.yml:9:66: services[7].readiness.timeout: expected a readiness timeout of at most 30m00s, found 2h00m",
    ]);
  });

  it("requires a name and an image, and refuses unknown keys with the closest known one", () => {
    const errors = parseErrors(["services:", "  - {name: a, imag: x}", STEPS].join("\n"));
    assert.deepEqual(errors, [
      "wf.yml:2:5: services[0]: expected the key `image`, found none",
      "wf.yml:2:15: services[0].imag: unknown key; did you mean `image`?",
    ]);
  });

  it("refuses more than eight services", () => {
    const list = Array.from({ length: 9 }, (_, i) => `  - {name: s${i}, image: x}`);
    assert.deepEqual(parseErrors(["services:", ...list, STEPS].join("\n")), [
      "wf.yml:2:3: services: expected at most 8 services, found 9",
    ]);
  });
});
