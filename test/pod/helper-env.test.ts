// Runs the helper for real under the host's sh, busybox sh and bash: the steps' variables, $KNOTLESS_ENV, the shell, the secrets.
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { buildEnvFile } from "../../src/pod/env-file.js";
import { MAX_STEP_ENV_FILE_BYTES, type HelperOptions } from "../../src/pod/helper-script.js";
import { buildSecretsPayload, checkSecretsReply } from "../../src/pod/secrets-payload.js";
import { createPod, FLAVOUR_TITLES, FLAVOURS, HAS_BWRAP, readFrames, type Flavour, type Pod } from "./helper-pod.js";

/** Values a naive quoting breaks: each must reach the step byte for byte. */
export const HOSTILE_VALUES = [
  { name: "NEWLINES", value: "line 1\nline 2\n\n" },
  { name: "QUOTES", value: `it's "double" '' '\\'' "'"` },
  { name: "DOLLARS", value: "$HOME ${PATH} $(echo no) `echo no` $$ $1" },
  { name: "BACKSLASHES", value: "\\ \\\\ \\n \\' \\\n\\" },
  { name: "UTF8", value: "é ü 漢字 🚀 \u00a0 ‮" },
  { name: "EMPTY", value: "" },
  { name: "SPACES", value: "  lead\tand trail  " },
  { name: "CRLF", value: "a\r\nb\r" },
  { name: "GLOB", value: "* ? [a] ~ -e" },
] as const;

/** A step script that writes each variable's value, exactly, to /work/got.NAME (unset: no file). */
function writeValuesScript(names: readonly string[]): string {
  return names
    .map((name) => `if [ -n "\${${name}+set}" ]; then printf '%s' "$${name}" > /work/got.${name}; fi`)
    .join("\n");
}

/** What the step saw for NAME (undefined: unset), as the bytes it wrote. */
function readValue(pod: Pod, name: string): string | undefined {
  const path = join(pod.work, `got.${name}`);
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

function writeStep(
  pod: Pod,
  index: number,
  script: string | Buffer,
  env: ReadonlyArray<{ name: string; value: string }> = [],
): void {
  writeFileSync(join(pod.knotless, "steps", `${index}.sh`), script);
  writeFileSync(join(pod.knotless, "env", `${index}.env`), buildEnvFile(env));
}

async function runStep(pod: Pod, index: number): Promise<ReturnType<typeof readFrames>> {
  const run = await pod.helper(["run", String(index)]);
  assert.equal(run.code, 0, run.stderr);
  return readFrames(run.stdout);
}

/** A shell with pipefail in this flavour's root: busybox's own sh has it, the others get bash. */
function pipefailShell(flavour: Flavour): readonly string[] {
  return flavour === "busybox" ? ["sh", "-eo", "pipefail"] : ["bash", "-eo", "pipefail"];
}

for (const flavour of FLAVOURS) {
  describe(
    `the steps' environment under ${FLAVOUR_TITLES[flavour]}`,
    // Each test makes its own sandbox and most of its time is its steps' sleeps: the tests run at once.
    { skip: HAS_BWRAP ? false : "bwrap is not installed", concurrency: true },
    () => {
      const scratch: string[] = [];
      const newPod = (helper: HelperOptions = {}): Pod => {
        const pod = createPod(flavour, { helper });
        scratch.push(pod.root);
        return pod;
      };
      after(() => {
        for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
      });

      it("a step sees the run's variables and its own env byte for byte, however hostile the values", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "env", "run.env"), buildEnvFile(HOSTILE_VALUES));
        const own = { name: "OWN", value: "step's own\n$x `y` \\z" };
        writeStep(pod, 0, writeValuesScript([...HOSTILE_VALUES.map((v) => v.name), own.name]), [own]);
        assert.deepEqual(await runStep(pod, 0), { stdout: "", stderr: "", end: ["exit 0"] });
        for (const { name, value } of [...HOSTILE_VALUES, own]) assert.equal(readValue(pod, name), value, name);
      });

      it("the run's environment, earlier steps' $KNOTLESS_ENV, the step's env and the secrets win over each other in that order", async () => {
        const pod = newPod({ secrets: true });
        const run = ["A", "B", "C", "D", "E"].map((name) => ({ name, value: "run" }));
        writeFileSync(join(pod.knotless, "env", "run.env"), buildEnvFile([...run, { name: "A", value: "run, later" }]));
        writeStep(pod, 0, `printf 'B=step 0\\nC=step 0\\nD=step 0\\n' >> "$KNOTLESS_ENV"`);
        writeStep(pod, 1, `${writeValuesScript(["A", "B", "C", "D", "E"])}\necho "$KNOTLESS_ENV $KNOTLESS_STEP_MARK"`, [
          { name: "C", value: "step 1" },
          { name: "D", value: "step 1" },
        ]);
        const payload = buildSecretsPayload([{ name: "D", value: "secret" }], "0123456789abcdef");
        assert.equal(
          checkSecretsReply(payload, (await pod.helper(["secrets"], payload.text)).stdout.toString()),
          undefined,
        );
        assert.deepEqual((await runStep(pod, 0)).end, ["exit 0"]);
        assert.deepEqual(await runStep(pod, 1), {
          stdout: "/knotless/run/1/env step-1\n",
          stderr: "",
          end: ["exit 0"],
        });
        assert.deepEqual(
          ["A", "B", "C", "D", "E"].map((name) => readValue(pod, name)),
          ["run, later", "step 0", "step 1", "secret", "run"],
        );
      });

      it("$KNOTLESS_ENV carries NAME=VALUE lines and heredoc blocks to every later step, byte for byte, with or without CRLF", async () => {
        const pod = newPod();
        // What step 0 appends, exactly: a quoted here-document copies these bytes, CRs included.
        const written = [
          "PLAIN=a=b<<c\r",
          "MULTI<<EOF",
          `it's "$HOME" \`x\` \\ end`,
          "",
          "  indented\r",
          "EOF",
          "",
          "QUOTE='",
          "EMPTY=",
          "UTF8<<DELIM WITH SPACES",
          "漢字 🚀",
          "DELIM WITH SPACES",
          "LAST=the last line",
        ].join("\n");
        writeStep(pod, 0, `cat >> "$KNOTLESS_ENV" <<'KNOTLESS_TEST'\n${written}\nKNOTLESS_TEST\n`);
        writeStep(pod, 1, writeValuesScript(["PLAIN", "MULTI", "QUOTE", "EMPTY", "UTF8", "LAST"]));
        writeStep(pod, 2, `printf 'PLAIN=from step 2' >> "$KNOTLESS_ENV"`);
        writeStep(pod, 3, writeValuesScript(["PLAIN", "MULTI"]));
        for (const index of [0, 1])
          assert.deepEqual(await runStep(pod, index), { stdout: "", stderr: "", end: ["exit 0"] }, `step ${index}`);
        const expected = {
          PLAIN: "a=b<<c",
          MULTI: `it's "$HOME" \`x\` \\ end\n\n  indented`,
          QUOTE: "'",
          EMPTY: "",
          UTF8: "漢字 🚀",
          LAST: "the last line",
        };
        for (const [name, value] of Object.entries(expected)) assert.equal(readValue(pod, name), value, name);
        for (const index of [2, 3]) assert.deepEqual((await runStep(pod, index)).end, ["exit 0"], `step ${index}`);
        assert.equal(readValue(pod, "PLAIN"), "from step 2", "a later step's $KNOTLESS_ENV overrides an earlier one's");
        assert.equal(readValue(pod, "MULTI"), expected.MULTI, "carried across two steps");
      });

      it("a later step's own env wins over what an earlier step wrote to $KNOTLESS_ENV", async () => {
        const pod = newPod();
        writeStep(pod, 0, `echo 'X=carried' >> "$KNOTLESS_ENV"`);
        writeStep(pod, 1, writeValuesScript(["X"]), [{ name: "X", value: "step env" }]);
        await runStep(pod, 0);
        await runStep(pod, 1);
        assert.equal(readValue(pod, "X"), "step env");
      });

      it("a malformed $KNOTLESS_ENV line fails the step that wrote it, names the line on its stderr and carries nothing", async () => {
        const pod = newPod();
        writeStep(pod, 0, `echo fine\nprintf 'GOOD=1\\n\\nnot a variable\\nLATER=2\\n' >> "$KNOTLESS_ENV"`);
        writeStep(pod, 1, writeValuesScript(["GOOD", "LATER"]));
        assert.deepEqual(await runStep(pod, 0), {
          stdout: "fine\n",
          stderr: `knotless: $KNOTLESS_ENV line 3: expected NAME=VALUE or NAME<<DELIMITER, found neither "=" nor "<<"\n`,
          end: ["exit 1"],
        });
        assert.deepEqual((await runStep(pod, 1)).end, ["exit 0"]);
        assert.deepEqual([readValue(pod, "GOOD"), readValue(pod, "LATER")], [undefined, undefined]);
      });

      it("says what was expected for a bad name, a runner-set name, a heredoc without delimiter or end, and a NUL", async () => {
        const cases: Array<[string, string]> = [
          [
            "A=1\\n1ABC=x\\n",
            `line 2: expected a variable name of letters, digits and _ that does not start with a digit, found "1ABC"`,
          ],
          ["=x\\n", `line 1: expected a variable name before "=" or "<<", found none`],
          ["A<B=1\\n", `line 1: expected "=" or "<<" after the name A, found "<"`],
          [
            "KNOTLESS_ENV=/tmp/x\\n",
            "line 1: expected a variable other than KNOTLESS_ENV, which the runner sets for every step",
          ],
          ["V<<\\n", `line 1: expected a delimiter after "V<<", found none`],
          [
            "A=1\\nV<<EOF\\nnever ended\\n",
            "line 2: expected a line EOF to end the value of V begun here, found the end of the file",
          ],
          ["A=1\\r\\nB=x\\0y\\n", "line 2: expected text, found a NUL byte (no environment variable can hold one)"],
        ];
        const pod = newPod();
        for (const [index, [content, message]] of cases.entries()) {
          writeStep(pod, index, `printf '${content}' >> "$KNOTLESS_ENV"`);
          assert.deepEqual(
            await runStep(pod, index),
            { stdout: "", stderr: `knotless: $KNOTLESS_ENV ${message}\n`, end: ["exit 1"] },
            content,
          );
        }
      });

      it("refuses a $KNOTLESS_ENV over 1 MiB at once, saying its size and the limit, and carries nothing", async () => {
        const pod = newPod();
        // 1 MiB + 1 byte of valid lines: only the size is wrong.
        writeStep(
          pod,
          0,
          `i=0; while [ $i -lt 16384 ]; do printf 'V%05d=%056d\\n' $i 0; i=$((i + 1)); done > "$KNOTLESS_ENV"; printf x >> "$KNOTLESS_ENV"`,
        );
        writeStep(pod, 1, writeValuesScript(["V00000"]));
        const started = Date.now();
        assert.deepEqual(await runStep(pod, 0), {
          stdout: "",
          stderr: `knotless: $KNOTLESS_ENV is ${MAX_STEP_ENV_FILE_BYTES + 1} bytes: expected at most ${MAX_STEP_ENV_FILE_BYTES} (1 MiB; Linux refuses to start a process whose one variable passes 128 KiB, or whose whole environment passes ~2 MiB)\n`,
          end: ["exit 1"],
        });
        assert.ok(Date.now() - started < 20_000, "refused without reading it line by line");
        assert.deepEqual((await runStep(pod, 1)).end, ["exit 0"]);
        assert.equal(readValue(pod, "V00000"), undefined);
      });

      it("a step that failed keeps its own exit code when its $KNOTLESS_ENV is malformed too", async () => {
        const pod = newPod();
        writeStep(pod, 0, `echo oops >> "$KNOTLESS_ENV"\nexit 3`);
        const frames = await runStep(pod, 0);
        assert.deepEqual(frames.end, ["exit 3"]);
        assert.match(frames.stderr, /line 1: expected NAME=VALUE/);
      });

      it("runs the step with the configured shell: under -eo pipefail a failing left side of a pipe fails the step", async () => {
        const script = "false | true\necho after\n";
        const plain = newPod();
        writeStep(plain, 0, script);
        assert.deepEqual(
          await runStep(plain, 0),
          { stdout: "after\n", stderr: "", end: ["exit 0"] },
          "sh -e alone lets the pipe pass",
        );
        const strict = newPod({ shell: pipefailShell(flavour) });
        writeStep(strict, 0, script);
        assert.deepEqual(await runStep(strict, 0), { stdout: "", stderr: "", end: ["exit 1"] });
      });

      it("a shell the image does not have fails the step with 127 and says so", async () => {
        const pod = newPod({ shell: ["no-such-shell", "-e"] });
        writeStep(pod, 0, "echo never\n");
        const frames = await runStep(pod, 0);
        assert.deepEqual(frames.end, ["exit 127"]);
        assert.match(frames.stderr, /^knotless: the step's shell no-such-shell is not in this image \(PATH=/);
      });

      it("takes secrets from stdin into a 0600 file in a 0700 directory, and installs them only with their receipt", async () => {
        const pod = newPod({ secrets: true });
        const secrets = HOSTILE_VALUES.map(({ name, value }) => ({ name: `S_${name}`, value }));
        const cut = buildSecretsPayload(secrets, "fedcba9876543210");
        // Cut inside the receipt, just before its newline, and inside a value right after a newline.
        for (const partial of [
          cut.text.slice(0, -10),
          cut.text.slice(0, -1),
          cut.text.slice(0, cut.text.indexOf("\n", 20) + 1),
        ]) {
          const refused = await pod.helper(["secrets"], partial);
          assert.equal(
            refused.stdout.toString(),
            `none\n${Buffer.byteLength(partial)}\n`,
            "a cut stream is reported without quoting it",
          );
          assert.notEqual(checkSecretsReply(cut, refused.stdout.toString()), undefined);
          assert.equal(existsSync(join(pod.secrets, "env")), false, "a cut stream installs nothing");
        }
        const payload = buildSecretsPayload(secrets, "0123456789abcdef");
        const taken = await pod.helper(["secrets"], payload.text);
        assert.equal(taken.code, 0, taken.stderr);
        assert.equal(checkSecretsReply(payload, taken.stdout.toString()), undefined, taken.stdout.toString());
        assert.equal(statSync(join(pod.secrets, "env")).mode & 0o777, 0o600);
        assert.equal(statSync(pod.secrets).mode & 0o777, 0o700);
        writeStep(pod, 0, writeValuesScript(secrets.map((s) => s.name)));
        assert.deepEqual((await runStep(pod, 0)).end, ["exit 0"]);
        for (const { name, value } of secrets) assert.equal(readValue(pod, name), value, name);
      });

      it("a run with secrets refuses to start a step without them", async () => {
        const pod = newPod({ secrets: true });
        writeStep(pod, 0, "echo never\n");
        assert.deepEqual(await runStep(pod, 0), {
          stdout: "",
          stderr: "knotless: the run's secrets are not in the pod (/knotless-secrets/env is missing)\n",
          end: ["exit 125"],
        });
      });

      it("pack-outputs removes the secrets before it packs /outputs, and forget-secrets removes them too", async () => {
        for (const command of [["pack-outputs"], ["forget-secrets"]]) {
          const pod = newPod({ secrets: true });
          const payload = buildSecretsPayload([{ name: "TOKEN", value: "hunter2" }], "0123456789abcdef");
          await pod.helper(["secrets"], payload.text);
          assert.ok(existsSync(join(pod.secrets, "env")));
          const done = await pod.helper(command);
          assert.equal(existsSync(join(pod.secrets, "env")), false, command[0]);
          assert.ok(!done.stdout.includes("hunter2"), command[0]);
        }
      });
    },
  );
}
