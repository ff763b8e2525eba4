// The in-pod shell programs (src/*/sh/*.sh) as their renderers hand them to the pod: every tag and setting comes from the TypeScript side.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  buildPvcEvictCommand,
  buildPvcListCommand,
  buildPvcRestoreCommand,
  buildPvcSaveCommand,
  buildPvcTouchCommand,
} from "../../src/cache/pvc-scripts.js";
import { buildGitCloneCommand, buildGitProbeCommand } from "../../src/pod/git-clone-script.js";
import { buildHelperScript, buildUploadCommand } from "../../src/pod/helper-script.js";
import { buildKeepAliveScript } from "../../src/pod/keep-alive.js";
import { renderShellProgram } from "../../src/pod/render-sh.js";

const SRC = new URL("../../../src/", import.meta.url);
/** Upper-case variables a program may read without its renderer: the shell's and the system's own. */
const SHELL_VARIABLES = new Set(["PATH", "IFS", "BASH_VERSION"]);

function readShellFiles(): { readonly name: string; readonly text: string }[] {
  return readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((folder) => {
      const dir = new URL(`${folder.name}/sh/`, SRC);
      let names: string[];
      try {
        names = readdirSync(dir).filter((name) => name.endsWith(".sh"));
      } catch {
        return [];
      }
      return names.map((name) => ({
        name: `${folder.name}/sh/${name}`,
        text: readFileSync(new URL(name, dir), "utf8"),
      }));
    });
}

const RENDERED: ReadonlyArray<readonly [string, string]> = [
  ["helper", buildHelperScript()],
  ["helper with secrets and bash", buildHelperScript({ secrets: true, shell: ["bash", "-eo", "pipefail"] })],
  ["upload", buildUploadCommand()[2]!],
  ["keep-alive", buildKeepAliveScript(600)],
  ["git probe", buildGitProbeCommand()[2]!],
  [
    "git clone",
    buildGitCloneCommand({ url: "https://example.com/r.git", sha: "a".repeat(40), depth: 1, submodules: false })[2]!,
  ],
  ["pvc list", buildPvcListCommand("r")[2]!],
  ["pvc restore", buildPvcRestoreCommand("r", "k", "n")[2]!],
  [
    "pvc save",
    buildPvcSaveCommand({ repo: "r", key: "k", paths: ["/work/a"], maxBytes: 1, createdAt: 1, nonce: "n" })[2]!,
  ],
  ["pvc touch", buildPvcTouchCommand("r", "k")[2]!],
  ["pvc evict", buildPvcEvictCommand(1, "n")[2]!],
];

describe("the in-pod shell programs", () => {
  it("no .sh file spells a knotless- status tag itself: every tag reaches it as a setting from its TypeScript constant", () => {
    const files = readShellFiles();
    assert.ok(files.length >= 10, `found only ${files.length} .sh files`);
    for (const { name, text } of files) {
      const code = text.split("\n").filter((line) => !line.trimStart().startsWith("#"));
      const spelled = code.filter((line) => /knotless-[a-z]/.test(line));
      assert.deepEqual(spelled, [], `${name} spells a tag`);
    }
  });

  it("every upper-case variable a rendered program reads is set by its renderer or by the program itself", () => {
    for (const [name, program] of RENDERED) {
      const code = program
        .split("\n")
        .filter((line) => !line.trimStart().startsWith("#"))
        .map((line) => line.replace(/\s#\s.*$/, ""))
        .join("\n");
      const read = new Set([...code.matchAll(/\$\{?([A-Z][A-Z0-9_]*)/g)].map((match) => match[1]!));
      const unset = [...read].filter(
        (variable) => !SHELL_VARIABLES.has(variable) && !new RegExp(`(^|[\\s;(])${variable}=`, "m").test(code),
      );
      assert.deepEqual(unset, [], `${name} reads variables nothing sets`);
    }
  });

  it("the renderer quotes a setting that is not a plain word, and refuses a name the programs could not read as a setting", () => {
    assert.equal(
      renderShellProgram({ A: "plain/word-1", B: "it's $(x)" }, "echo\n"),
      "A=plain/word-1\nB='it'\\''s $(x)'\necho",
    );
    assert.throws(() => renderShellProgram({ lower: 1 }), RangeError);
  });

  it("the renderer leaves out a program's opening contract comment and keeps the comments inside it", () => {
    assert.equal(
      renderShellProgram({}, "# contract\n# more\n\nrun # why\n# inside\nend\n"),
      "run # why\n# inside\nend",
    );
  });
});
