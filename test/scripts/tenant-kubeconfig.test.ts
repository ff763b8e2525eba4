// scripts/tenant-kubeconfig.sh against a stand-in oauth-signin.ts (test/fixtures/kcp-standin) and a stand-in gateway on 127.0.0.1.
import assert from "node:assert/strict";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { afterEach, describe, it } from "node:test";
import {
  startFakeGateway,
  type FakeGateway,
  type FakeGatewayOptions,
  type GatewayMisbehaviour,
} from "../support/fake-tenant-gateway.js";
import { REPO_ROOT } from "../support/run-cli.js";
import { findSecretLeaks, makePathWithout, modeOf, runScript, type ScriptRun } from "../support/run-script.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const STANDIN = join(REPO_ROOT, "test", "fixtures", "kcp-standin");
/** The scripts' PATH: this node's directory and the system's, nothing else (so no tsx of the machine's own). */
const TEST_PATH = [dirname(process.execPath), "/usr/bin", "/bin"].join(delimiter);
const CREDENTIAL = "FAKE-CREDENTIAL-7f3a9c21";
const SESSION = "FAKE-SESSION-TOKEN-51c2e0d8";
const ADMIN_KEY = "FAKE-ADMIN-KEY-9d41b7aa";
const SECRETS = { credential: CREDENTIAL, session: SESSION, "admin key": ADMIN_KEY };
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
  - name: demo
    cluster:
      server: https://demo.tenant.invalid:6443
users:
  - name: admin
    user:
      token: ${ADMIN_KEY}
contexts:
  - name: demo
    context: { cluster: demo, user: admin }
current-context: demo
`;

interface Machine {
  readonly root: string;
  readonly home: string;
  readonly tmp: string;
  readonly kcp: string;
  readonly credentials: string;
  readonly record: string;
  readonly env: Record<string, string>;
}

/** A fresh home, TMPDIR, KCP checkout (the stand-in and its tsx) and credential file (mode 0600). */
function makeMachine(): Machine {
  const root = makeTestTempDir("tenant-kubeconfig-");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  const kcp = join(root, "kcp");
  for (const dir of [home, tmp, join(kcp, "scripts"), join(kcp, "node_modules", ".bin"), join(root, "secret")])
    mkdirSync(dir, { recursive: true });
  copyFileSync(join(STANDIN, "oauth-signin.ts"), join(kcp, "scripts", "oauth-signin.ts"));
  symlinkSync(join(STANDIN, "tsx"), join(kcp, "node_modules", ".bin", "tsx"));
  const credentials = join(root, "secret", "credentials");
  writeFileSync(credentials, `handle=alice.test\npassword=${CREDENTIAL}\n`, { mode: 0o600 });
  const record = join(root, "signin-call.json");
  const env = {
    PATH: TEST_PATH,
    HOME: home,
    TMPDIR: tmp,
    LANG: "C",
    STANDIN_SESSION_TOKEN: SESSION,
    STANDIN_RECORD: record,
  };
  return { root, home, tmp, kcp, credentials, record, env };
}

let gateway: FakeGateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

async function startGateway(options: Partial<FakeGatewayOptions> = {}): Promise<FakeGateway> {
  gateway = await startFakeGateway({ token: SESSION, kubeconfig: KUBECONFIG, ...options });
  return gateway;
}

function run(machine: Machine, args: readonly string[], env: Record<string, string> = {}): Promise<ScriptRun> {
  return runScript("tenant-kubeconfig.sh", args, { env: { ...machine.env, ...env }, cwd: machine.root });
}

function standardArgs(machine: Machine, url: string, extra: readonly string[] = []): string[] {
  return [
    "--cluster",
    "demo",
    "--credentials",
    machine.credentials,
    "--gateway",
    url,
    "--kcp-repo",
    machine.kcp,
    "--poll-interval",
    "0.05s",
    ...extra,
  ];
}

function defaultKubeconfigPath(machine: Machine): string {
  return join(machine.home, ".tmp", "knotless-tenant", "demo.kubeconfig");
}

/** No secret anywhere but where it must be, and no temp file left. */
function assertNoLeaks(machine: Machine, result: ScriptRun, kubeconfigPath?: string): void {
  const allowed = { credential: [machine.credentials], "admin key": kubeconfigPath ? [kubeconfigPath] : [] };
  assert.deepEqual(findSecretLeaks(result, [machine.root], SECRETS, allowed), []);
  assert.deepEqual(readdirSync(machine.tmp), [], "the script's temp files are removed");
}

function routes(g: FakeGateway): string[] {
  return g.requests.map((r) => `${r.method} ${r.path}`);
}

describe("scripts/tenant-kubeconfig.sh", { concurrency: 1 }, () => {
  it("prints its help with every option, the exit codes and where the assumed interface is stated", async () => {
    const result = await run(makeMachine(), ["--help"]);
    assert.equal(result.code, 0, result.stderr);
    for (const flag of [
      "--cluster",
      "--credentials",
      "--gateway",
      "--kcp-repo",
      "--out-dir",
      "--ready-timeout",
      "--poll-interval",
      "--signin-timeout",
      "--no-create",
    ]) {
      assert.ok(result.stdout.includes(flag), `--help names ${flag}`);
    }
    assert.match(result.stdout, /no default/);
    assert.match(result.stdout, /Exit codes:[\s\S]*6 {2}the cluster was not Ready/);
    assert.match(result.stdout, /docs\/live-proof\.md/);
    const script = readFileSync(join(REPO_ROOT, "scripts", "tenant-kubeconfig.sh"), "utf8");
    assert.match(script, /THE ASSUMED INTERFACE/);
    assert.match(
      readFileSync(join(REPO_ROOT, "docs", "live-proof.md"), "utf8"),
      /## The assumed sign-in and gateway interface/,
    );
  });

  it("creates a missing cluster, polls until it is Ready and writes its kubeconfig mode 0600 under ~/.tmp", async () => {
    const machine = makeMachine();
    const g = await startGateway({ afterCreate: ["Pending", "Provisioning", "Provisioning", "Ready"] });
    const result = await run(machine, standardArgs(machine, g.url));
    assert.equal(result.code, 0, result.stderr);
    const path = defaultKubeconfigPath(machine);
    assert.equal(result.stdout, `${path}\n`, "stdout is the kubeconfig's path and nothing else");
    assert.equal(readFileSync(path, "utf8"), KUBECONFIG);
    assert.equal(modeOf(path), "0600");
    assert.equal(modeOf(join(machine.home, ".tmp", "knotless-tenant")), "0700");
    assert.deepEqual(routes(g), [
      "GET /v1/clusters/demo",
      "POST /v1/clusters",
      "GET /v1/clusters/demo",
      "GET /v1/clusters/demo",
      "GET /v1/clusters/demo",
      "GET /v1/clusters/demo/kubeconfig",
    ]);
    assert.ok(
      g.requests.every((r) => r.authorized && r.accept === "application/json"),
      "every call carries the session as a bearer token",
    );
    assert.deepEqual(JSON.parse(g.requests[1]!.body), { name: "demo" });
    assert.match(result.stderr, /creating tenant cluster demo/);
    assert.equal(result.stderr.match(/cluster demo: Provisioning/g)?.length, 1, "a status is reported when it changes");
    assert.match(result.stderr, /cluster demo: Ready/);
    const call = JSON.parse(readFileSync(machine.record, "utf8")) as { args: string[]; cwd: string };
    assert.deepEqual(
      call.args,
      ["--gateway", g.url, "--credentials", machine.credentials],
      "oauth-signin.ts is called as docs/live-proof.md states",
    );
    assert.equal(call.cwd, machine.kcp);
    assertNoLeaks(machine, result, path);
  });

  it("reuses an existing Ready cluster without creating it, and writes where --out-dir says", async () => {
    const machine = makeMachine();
    const g = await startGateway({ existing: { demo: ["Ready"] } });
    const result = await run(machine, standardArgs(machine, g.url, ["--out-dir", "kubeconfigs"]));
    assert.equal(result.code, 0, result.stderr);
    const path = join(machine.root, "kubeconfigs", "demo.kubeconfig");
    assert.equal(result.stdout, `${path}\n`);
    assert.equal(modeOf(path), "0600");
    assert.deepEqual(routes(g), ["GET /v1/clusters/demo", "GET /v1/clusters/demo/kubeconfig"]);
    assert.match(result.stderr, /reusing tenant cluster demo \(status Ready\)/);
    assertNoLeaks(machine, result, path);
  });

  it("reuses a cluster that was created meanwhile when the create answers 409", async () => {
    const machine = makeMachine();
    const g = await startGateway({ afterCreate: ["Provisioning", "Ready"], misbehave: "create-conflict" });
    const result = await run(machine, standardArgs(machine, g.url));
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(routes(g), [
      "GET /v1/clusters/demo",
      "POST /v1/clusters",
      "GET /v1/clusters/demo",
      "GET /v1/clusters/demo",
      "GET /v1/clusters/demo/kubeconfig",
    ]);
    assertNoLeaks(machine, result, defaultKubeconfigPath(machine));
  });

  it("retries a gateway that answers 503 once", async () => {
    const machine = makeMachine();
    const g = await startGateway({ existing: { demo: ["Ready"] }, misbehave: "server-error-once" });
    const result = await run(machine, standardArgs(machine, g.url));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /HTTP 503: try again later; trying again/);
    assert.equal(routes(g).length, 3);
  });

  it("fails with exit 6 when the cluster is not Ready within --ready-timeout, naming its last status, and writes no kubeconfig", async () => {
    const machine = makeMachine();
    const g = await startGateway({ afterCreate: ["Provisioning"], message: "renting a node" });
    const result = await run(
      machine,
      standardArgs(machine, g.url, ["--ready-timeout", "0.6s", "--poll-interval", "0.1s"]),
    );
    assert.equal(result.code, 6, result.stderr);
    assert.match(
      result.stderr,
      /cluster demo was not Ready within 0\.6s \(last status: Provisioning \(renting a node\)\); raise --ready-timeout/,
    );
    assert.ok(routes(g).filter((r) => r === "GET /v1/clusters/demo").length >= 4, "it polled");
    assert.equal(result.stdout, "");
    assert.equal(existsSync(defaultKubeconfigPath(machine)), false);
    assert.deepEqual(readdirSync(join(machine.home, ".tmp", "knotless-tenant")), []);
    assertNoLeaks(machine, result);
  });

  it("fails with exit 5 when the cluster reports Failed, showing its message", async () => {
    const machine = makeMachine();
    const g = await startGateway({ afterCreate: ["Pending", "Failed"], message: "no capacity" });
    const result = await run(machine, standardArgs(machine, g.url));
    assert.equal(result.code, 5, result.stderr);
    assert.match(result.stderr, /cluster demo reports Failed: no capacity/);
    assert.equal(existsSync(defaultKubeconfigPath(machine)), false);
  });

  it("fails with exit 5 under --no-create when the cluster does not exist, creating nothing", async () => {
    const machine = makeMachine();
    const g = await startGateway();
    const result = await run(machine, standardArgs(machine, g.url, ["--no-create"]));
    assert.equal(result.code, 5, result.stderr);
    assert.match(result.stderr, /tenant cluster demo does not exist \(GET answered 404\) and --no-create was given/);
    assert.deepEqual(routes(g), ["GET /v1/clusters/demo"]);
  });

  it("fails with exit 5 naming the gateway when nothing listens there", async () => {
    const machine = makeMachine();
    const port = await findClosedPort();
    const result = await run(machine, standardArgs(machine, `http://127.0.0.1:${port}`));
    assert.equal(result.code, 5, result.stderr);
    assert.match(
      result.stderr,
      new RegExp(
        `GET /v1/clusters/demo: cannot reach the gateway at http://127\\.0\\.0\\.1:${port}: ECONNREFUSED \\(3 tries\\)`,
      ),
    );
    assertNoLeaks(machine, result);
  });

  describe("bad usage exits 2 before anything is called", () => {
    const cases: ReadonlyArray<{ name: string; args: (m: Machine, url: string) => string[]; message: RegExp }> = [
      {
        name: "no --gateway",
        args: (m) => ["--cluster", "demo", "--credentials", m.credentials, "--kcp-repo", m.kcp],
        message:
          /--gateway URL is required \(or KNOTLESS_TENANT_GATEWAY\): the operator's gateway URL; there is no default/,
      },
      {
        name: "no --cluster",
        args: (m, url) => ["--credentials", m.credentials, "--gateway", url, "--kcp-repo", m.kcp],
        message: /--cluster NAME is required/,
      },
      {
        name: "no --credentials",
        args: (m, url) => ["--cluster", "demo", "--gateway", url, "--kcp-repo", m.kcp],
        message: /--credentials FILE is required/,
      },
      {
        name: "a plain-http gateway that is not loopback",
        args: (m) => standardArgs(m, "http://gateway.example.invalid"),
        message: /--gateway must be https/,
      },
      {
        name: "an unknown option",
        args: (m, url) => [...standardArgs(m, url), "--verbose"],
        message: /unknown option "--verbose"/,
      },
      {
        name: "a malformed duration",
        args: (m, url) => standardArgs(m, url, ["--ready-timeout", "soon"]),
        message: /--ready-timeout expects a duration such as 90s, 15m or 1h \(got "soon"\)/,
      },
      {
        name: "a cluster name that is not a DNS label",
        args: (m, url) => [...standardArgs(m, url), "--cluster", "Demo_1"],
        message: /--cluster expects a DNS-1123 label/,
      },
      {
        name: "an option without its value",
        args: (m, url) => [...standardArgs(m, url), "--out-dir"],
        message: /--out-dir needs a value/,
      },
    ];
    for (const c of cases) {
      it(`with ${c.name}`, async () => {
        const machine = makeMachine();
        const g = await startGateway();
        const result = await run(machine, c.args(machine, g.url));
        assert.equal(result.code, 2, result.stderr);
        assert.match(result.stderr, c.message);
        assert.deepEqual(g.requests, []);
        assert.equal(existsSync(machine.record), false, "oauth-signin.ts was not called");
      });
    }
  });

  describe("a missing prerequisite exits 3 at once, saying which and how to get it", () => {
    const cases: ReadonlyArray<{
      name: string;
      prepare: (m: Machine) => { args?: string[]; env?: Record<string, string> };
      message: RegExp;
    }> = [
      {
        name: "without node",
        prepare: (m) => ({
          env: {
            PATH: makePathWithout(join(m.root, "bin-without-node"), [
              "node",
              "nodejs",
              "npx",
              "npm",
              "tsx",
              "corepack",
            ]),
          },
        }),
        message: /node is not on PATH: install Node\.js 20 or later/,
      },
      {
        name: "without the KCP repository path",
        prepare: () => ({ args: ["--kcp-repo", ""] }),
        message: /the socialweb-computer-kcp repository is not given: clone it, run npm ci in it, and set KCP_REPO=/,
      },
      {
        name: "with a KCP repository that is not there",
        prepare: (m) => ({ args: ["--kcp-repo", join(m.root, "nowhere")] }),
        message: /is not a directory: set KCP_REPO/,
      },
      {
        name: "with a KCP repository that has no scripts/oauth-signin.ts",
        prepare: (m) => {
          mkdirSync(join(m.root, "other-repo"));
          return { args: ["--kcp-repo", join(m.root, "other-repo")] };
        },
        message:
          /other-repo\/scripts\/oauth-signin\.ts not found: KCP_REPO \(or --kcp-repo\) must name a checkout of socialweb-computer-kcp/,
      },
      {
        name: "without tsx",
        prepare: (m) => {
          mkdirSync(join(m.root, "kcp-without-tsx", "scripts"), { recursive: true });
          copyFileSync(join(STANDIN, "oauth-signin.ts"), join(m.root, "kcp-without-tsx", "scripts", "oauth-signin.ts"));
          return { args: ["--kcp-repo", join(m.root, "kcp-without-tsx")] };
        },
        message:
          /tsx not found \(neither .*node_modules\/\.bin\/tsx nor on PATH\): run npm ci in .*, or npm install -g tsx/,
      },
      {
        name: "without the credential file",
        prepare: (m) => ({ args: ["--credentials", join(m.root, "secret", "absent")] }),
        message: /credential file .*absent does not exist: create it .* and chmod 600 it/,
      },
      {
        name: "with a credential file that group and others can read",
        prepare: (m) => {
          chmodSync(m.credentials, 0o644);
          return {};
        },
        message: /credential file .*credentials is accessible to group or others \(mode -rw-r--r--\): chmod 600 /,
      },
      {
        name: "with an empty credential file",
        prepare: (m) => {
          writeFileSync(m.credentials, "");
          return {};
        },
        message: /credential file .*credentials is empty/,
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        if (c.name === "without tsx" && TEST_PATH.split(delimiter).some((dir) => existsSync(join(dir, "tsx")))) {
          return; // a machine with tsx installed next to node or in /usr/bin cannot show this case
        }
        const machine = makeMachine();
        const g = await startGateway();
        const { args = [], env = {} } = c.prepare(machine);
        const result = await run(machine, [...standardArgs(machine, g.url), ...args], env);
        assert.equal(result.code, 3, result.stderr);
        assert.match(result.stderr, c.message);
        assert.deepEqual(g.requests, []);
        assert.equal(existsSync(machine.record), false, "oauth-signin.ts was not called");
        assertNoLeaks(machine, result);
      });
    }
  });

  describe("a sign-in that fails or behaves otherwise exits 4 naming the expectation, before any gateway call", () => {
    const cases: ReadonlyArray<{ mode: string; message: RegExp; extra?: string[] }> = [
      {
        mode: "fail",
        message: /oauth-signin\.ts exited 1 \(expected 0 and one JSON object with a sessionToken on stdout\)/,
      },
      {
        mode: "fail-leaky",
        message: /debug: read \*\*\*\n[\s\S]*debug: the password was \*\*\*\n[\s\S]*oauth-signin\.ts exited 1/,
      },
      {
        mode: "empty",
        message:
          /oauth-signin\.ts exited 0 but printed nothing on stdout \(expected one JSON object with a non-empty "sessionToken" string\)/,
      },
      {
        mode: "not-json",
        message:
          /oauth-signin\.ts printed \d+ bytes on stdout that are not JSON \(expected .*; not shown, it may hold a secret\)/,
      },
      {
        mode: "no-token",
        message:
          /oauth-signin\.ts printed a JSON object without a non-empty "sessionToken" string \(.*its keys: session\)/,
      },
      { mode: "array", message: /oauth-signin\.ts printed JSON that is not an object/ },
      {
        mode: "hang",
        message:
          /oauth-signin\.ts did not finish within --signin-timeout 1s \(expected it to end on its own, without a prompt/,
        extra: ["--signin-timeout", "1s"],
      },
    ];
    for (const c of cases) {
      it(
        `when the stand-in's mode is ${c.mode}`,
        { skip: c.mode === "hang" && !existsSync("/usr/bin/timeout") ? "no timeout(1) here" : false },
        async () => {
          const machine = makeMachine();
          const g = await startGateway();
          const result = await run(machine, standardArgs(machine, g.url, c.extra ?? []), { STANDIN_SIGNIN: c.mode });
          assert.equal(result.code, 4, result.stderr);
          assert.match(result.stderr, c.message);
          assert.deepEqual(g.requests, []);
          assert.equal(existsSync(defaultKubeconfigPath(machine)), false);
          assertNoLeaks(machine, result);
        },
      );
    }
  });

  describe("a gateway that answers otherwise exits 5 naming the expectation, and writes no kubeconfig", () => {
    const cases: ReadonlyArray<{ misbehave: GatewayMisbehaviour; title: string; message: RegExp }> = [
      {
        misbehave: "refuse-session",
        title: "refuses the session",
        message: /GET \/v1\/clusters\/demo: the gateway refused the session \(HTTP 401\); sign in again/,
      },
      {
        misbehave: "cluster-not-json",
        title: "answers a cluster read with HTML",
        message:
          /GET \/v1\/clusters\/demo: HTTP 200 with a body that is not JSON \(expected \{"name": "<name>", "status": "<status>"\}\)/,
      },
      {
        misbehave: "cluster-no-status",
        title: "sends a cluster without a status",
        message: /GET \/v1\/clusters\/demo: the answer has no "status" string/,
      },
      {
        misbehave: "cluster-wrong-name",
        title: "sends another cluster than the one asked for",
        message: /the answer names cluster "demo-other", not "demo"/,
      },
      {
        misbehave: "kubeconfig-missing",
        title: "sends no kubeconfig field",
        message:
          /GET \/v1\/clusters\/demo\/kubeconfig: the answer has no non-empty "kubeconfig" string \(expected 200 with \{"kubeconfig": "<kubeconfig text>"\}\)/,
      },
      {
        misbehave: "kubeconfig-not-a-kubeconfig",
        title: "sends a kubeconfig field that is not a kubeconfig",
        message: /the "kubeconfig" field is not a kubeconfig: no "kind: Config" line \(not shown, it holds a key\)/,
      },
    ];
    for (const c of cases) {
      it(`when it ${c.title}`, async () => {
        const machine = makeMachine();
        await startGateway({ existing: { demo: ["Ready"] }, misbehave: c.misbehave });
        const result = await run(machine, standardArgs(machine, gateway!.url));
        assert.equal(result.code, 5, result.stderr);
        assert.match(result.stderr, c.message);
        assert.equal(result.stdout, "");
        assert.deepEqual(readdirSync(join(machine.home, ".tmp", "knotless-tenant")), []);
        assertNoLeaks(machine, result);
      });
    }
  });
});

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
function findClosedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
