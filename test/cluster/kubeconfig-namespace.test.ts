// Tests reading the kubeconfig context's namespace the way kubectl would pick it, and the errors for a bad kubeconfig.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, it } from "node:test";
import { listKubeconfigFiles, readContextNamespace } from "../../src/cluster/kubeconfig-namespace.js";
import { InputError } from "../../src/core/errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("knotless-kubeconfig-");
let files = 0;

/** Writes a kubeconfig with `text` to a new file and returns its path. */
function writeKubeconfig(text: string): string {
  files += 1;
  const path = join(dir, `config-${files}.yaml`);
  writeFileSync(path, text);
  return path;
}

const TWO_CONTEXTS = `apiVersion: v1
kind: Config
current-context: dev
contexts:
  - name: dev
    context: { cluster: local, user: me, namespace: team-dev }
  - name: prod
    context: { cluster: remote, user: me, namespace: team-prod }
  - name: bare
    context: { cluster: remote, user: me }
`;

/** Checks that `promise` rejects with an InputError whose message names `file` and matches `message`. */
async function assertInputError(promise: Promise<unknown>, file: string, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof InputError, `not an InputError: ${String(error)}`);
    assert.ok(error.message.includes(file), `the message does not name ${file}: ${error.message}`);
    assert.match(error.message, message);
    return true;
  });
}

describe("listKubeconfigFiles", () => {
  it("uses only --kubeconfig when it is given", () => {
    assert.deepEqual(listKubeconfigFiles("/etc/kube.yaml", { KUBECONFIG: "/a:/b" }, "/home/me"), ["/etc/kube.yaml"]);
  });

  it("splits $KUBECONFIG into its files, skipping empty entries", () => {
    const list = ["/a/config", "", "/b/config", ""].join(delimiter);
    assert.deepEqual(listKubeconfigFiles(undefined, { KUBECONFIG: list }, "/home/me"), ["/a/config", "/b/config"]);
  });

  it("falls back to ~/.kube/config when neither is set", () => {
    assert.deepEqual(listKubeconfigFiles(undefined, {}, "/home/me"), ["/home/me/.kube/config"]);
    assert.deepEqual(listKubeconfigFiles(undefined, { KUBECONFIG: "" }, "/home/me"), ["/home/me/.kube/config"]);
  });
});

describe("readContextNamespace", () => {
  it("returns the namespace of the current context", async () => {
    assert.equal(await readContextNamespace([writeKubeconfig(TWO_CONTEXTS)], undefined, true), "team-dev");
  });

  it("returns the namespace of the context named by --context instead of the current one", async () => {
    assert.equal(await readContextNamespace([writeKubeconfig(TWO_CONTEXTS)], "prod", true), "team-prod");
  });

  it("returns undefined when the context sets no namespace, so the caller uses the default", async () => {
    assert.equal(await readContextNamespace([writeKubeconfig(TWO_CONTEXTS)], "bare", true), undefined);
    assert.equal(
      await readContextNamespace(
        [writeKubeconfig(TWO_CONTEXTS.replace("current-context: dev", "current-context: bare"))],
        undefined,
        true,
      ),
      undefined,
    );
  });

  it("returns undefined when there is no current context, or the current context is not defined", async () => {
    assert.equal(
      await readContextNamespace(
        [writeKubeconfig(TWO_CONTEXTS.replace("current-context: dev\n", ""))],
        undefined,
        true,
      ),
      undefined,
    );
    assert.equal(
      await readContextNamespace(
        [writeKubeconfig(TWO_CONTEXTS.replace("current-context: dev", "current-context: gone"))],
        undefined,
        true,
      ),
      undefined,
    );
  });

  it("returns undefined for an empty kubeconfig", async () => {
    assert.equal(await readContextNamespace([writeKubeconfig("")], undefined, true), undefined);
  });

  it("returns undefined when the default kubeconfig files are missing", async () => {
    assert.equal(
      await readContextNamespace([join(dir, "missing-1"), join(dir, "missing-2")], undefined, false),
      undefined,
    );
  });

  it("skips missing files of $KUBECONFIG and reads the others", async () => {
    assert.equal(
      await readContextNamespace([join(dir, "missing"), writeKubeconfig(TWO_CONTEXTS)], undefined, false),
      "team-dev",
    );
  });

  it("takes the current context from the first file that sets one, as kubectl merges", async () => {
    const contextsOnly = writeKubeconfig(TWO_CONTEXTS.replace("current-context: dev\n", ""));
    const currentOnly = writeKubeconfig("current-context: prod\n");
    const otherCurrent = writeKubeconfig("current-context: dev\n");
    assert.equal(await readContextNamespace([contextsOnly, currentOnly, otherCurrent], undefined, false), "team-prod");
  });

  it("takes a context from the first file that defines it, even when that definition has no namespace", async () => {
    const first = writeKubeconfig("current-context: dev\ncontexts:\n  - name: dev\n    context: { cluster: local }\n");
    const second = writeKubeconfig(TWO_CONTEXTS);
    assert.equal(await readContextNamespace([first, second], undefined, false), undefined);
    assert.equal(await readContextNamespace([second, first], undefined, false), "team-dev");
  });

  it("rejects a --context that no file defines, naming the context and the files", async () => {
    const file = writeKubeconfig(TWO_CONTEXTS);
    await assertInputError(readContextNamespace([file], "staging", true), file, /no context named "staging"/);
  });

  it("rejects an explicit kubeconfig that cannot be read, naming the file and why", async () => {
    const missing = join(dir, "no-such-config");
    await assertInputError(
      readContextNamespace([missing], undefined, true),
      missing,
      /cannot read the kubeconfig: ENOENT/,
    );
    await assertInputError(readContextNamespace([dir], undefined, true), dir, /cannot read the kubeconfig: EISDIR/);
  });

  it("rejects a kubeconfig that is not valid YAML, naming the file and the line", async () => {
    const file = writeKubeconfig(
      "current-context: dev\ncontexts:\n  - name: dev\n    context: { namespace: x\n  - name: other\n",
    );
    await assertInputError(readContextNamespace([file], undefined, true), file, /not valid YAML: .*line \d+/);
    const tabs = writeKubeconfig("current-context: dev\ncontexts:\n\t- name: dev\n");
    await assertInputError(readContextNamespace([tabs], undefined, true), tabs, /not valid YAML: .*line 3\b/);
  });

  it("names the line of the entry that has the wrong shape, and of a YAML error", async () => {
    const file = writeKubeconfig("current-context: dev\ncontexts:\n  - name: other\n    context: {}\n  - 5\n");
    await assertInputError(
      readContextNamespace([file], undefined, true),
      `${file}:5`,
      /context entry 2 must be a mapping/,
    );
    const namespace = writeKubeconfig(
      "current-context: dev\ncontexts:\n  - name: dev\n    context:\n      namespace: [a, b]\n",
    );
    await assertInputError(
      readContextNamespace([namespace], undefined, true),
      `${namespace}:5`,
      /"namespace" must be a string/,
    );
    const broken = writeKubeconfig("current-context: dev\ncurrent-context: prod\n");
    await assert.rejects(readContextNamespace([broken], undefined, true), (error: Error) => {
      assert.ok(error.message.startsWith(`${broken}:2: the kubeconfig is not valid YAML: `), error.message);
      assert.doesNotMatch(error.message, /:$/);
      return true;
    });
  });

  it("rejects a kubeconfig whose contexts are not a list of entries, naming the file", async () => {
    for (const contexts of ["contexts: 5", "contexts:\n  dev: { namespace: x }", "contexts:\n  - null"]) {
      const file = writeKubeconfig(`current-context: dev\n${contexts}\n`);
      await assertInputError(readContextNamespace([file], undefined, true), file, /context/);
    }
  });
});
