import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  identifyHashFilesCall,
  listHashFilesCalls,
  listTemplateVariables,
  MAX_KEY_LENGTH,
  parseKeyTemplate,
  renderKeyTemplate,
  RUN_VARIABLE_SOURCES,
  type KeyTemplate,
} from "../../src/workflow/render-key.js";
import { buildRunVariables } from "../../src/settings/run-variables.js";

function parse(source: string): KeyTemplate {
  const parsed = parseKeyTemplate(source);
  assert.ok(parsed.ok, parsed.ok ? "" : `${parsed.message} at ${parsed.character}`);
  return parsed.template;
}

function parseError(source: string): string {
  const parsed = parseKeyTemplate(source);
  assert.ok(!parsed.ok, `expected ${JSON.stringify(source)} to be refused`);
  return `${parsed.character}: ${parsed.message}`;
}

describe("parseKeyTemplate", () => {
  it("reads text, variables and hashFiles calls, with or without blanks inside the braces", () => {
    assert.deepEqual(parse(`deps-{{ hashFiles "package-lock.json" "**/go.sum" }}-{{KNOTLESS_REF_NAME}}`).parts, [
      { kind: "text", text: "deps-" },
      { kind: "hashFiles", patterns: ["package-lock.json", "**/go.sum"] },
      { kind: "text", text: "-" },
      { kind: "variable", name: "KNOTLESS_REF_NAME" },
    ]);
    assert.deepEqual(parse(`{{hashFiles "a"}}`).parts, [{ kind: "hashFiles", patterns: ["a"] }]);
    assert.deepEqual(parse("{{ \tCI\t }}").parts, [{ kind: "variable", name: "CI" }]);
    assert.deepEqual(parse("plain-key").parts, [{ kind: "text", text: "plain-key" }]);
  });

  it('takes \\" and \\\\ as escapes inside a pattern and keeps any other backslash for the glob', () => {
    assert.deepEqual(parse(String.raw`{{ hashFiles "a\"b" "c\\d" "e\*f" }}`).parts, [
      { kind: "hashFiles", patterns: ['a"b', "c\\d", "e\\*f"] },
    ]);
  });

  it("lists the variables once each and the hashFiles calls in order", () => {
    const template = parse(`{{ CI }}{{ hashFiles "a" }}{{ CI }}{{ KNOTLESS_SHA }}{{ hashFiles "b" "c" }}`);
    assert.deepEqual(listTemplateVariables(template), ["CI", "KNOTLESS_SHA"]);
    assert.deepEqual(listHashFilesCalls(template), [["a"], ["b", "c"]]);
  });

  it("refuses malformed actions, naming the character where each starts", () => {
    assert.equal(parseError("deps-{{ CI"), "6: `{{` is not closed by `}}`");
    assert.equal(parseError(`deps-{{ hashFiles "a"`), "6: `{{` is not closed by `}}`");
    assert.equal(parseError("deps-}}"), "6: a `}}` without its `{{`");
    assert.equal(
      parseError("x{{ }}"),
      `2: \`{{ }}\` is empty; expected a variable such as {{ KNOTLESS_REF_NAME }} or {{ hashFiles "package-lock.json" }}`,
    );
    assert.equal(
      parseError("{{ hashFiles }}"),
      `4: hashFiles needs at least one quoted pattern, such as {{ hashFiles "package-lock.json" }}`,
    );
    assert.equal(parseError(`{{ hashfiles "a" }}`), "4: unknown function `hashfiles`; did you mean `hashFiles`?");
    assert.equal(parseError(`{{ sha256 "a" }}`), "4: unknown function `sha256`; the one function is hashFiles");
    assert.equal(parseError("{{ hashFiles 'a' }}"), '14: quote each pattern with double quotes: "package-lock.json"');
    assert.equal(parseError("{{ hashFiles a }}"), '14: expected a pattern in double quotes, found "a"');
    assert.equal(parseError(`{{ hashFiles "a""b" }}`), "17: expected a blank between two patterns");
    assert.equal(parseError(`{{ hashFiles "a }}`), '14: a quoted pattern is not closed by `"`');
    assert.equal(parseError("{{ 1CI }}"), '4: expected a variable name or hashFiles after `{{`, found "1CI"');
    assert.equal(parseError("{{ KNOTLESS-SHA }}"), '12: expected `}}` after KNOTLESS, found "-SHA"');
  });

  it("refuses hashFiles patterns that leave the checkout or are not globs", () => {
    assert.match(
      parseError(`{{ hashFiles "/etc/passwd" }}`),
      /^14: the pattern "\/etc\/passwd" is absolute; hashFiles patterns are relative to the checkout/,
    );
    assert.match(parseError(`{{ hashFiles "a/../../b" }}`), /^14: the pattern "a\/..\/..\/b" has a `\.\.` segment/);
    assert.equal(
      parseError(`{{ hashFiles "src/[a" }}`),
      '14: the pattern "src/[a" has a `[` without its `]` (within one `/`-separated part)',
    );
    assert.equal(parseError(`{{ hashFiles "" }}`), '14: the pattern "" is empty');
  });
});

describe("renderKeyTemplate", () => {
  const variables = new Map([
    ["CI", "true"],
    ["KNOTLESS_REF_NAME", "main"],
  ]);
  const fileHashes = new Map([[identifyHashFilesCall(["package-lock.json"]), "ab12"]]);

  it("puts each variable's value and each call's hash where the template says", () => {
    assert.deepEqual(
      renderKeyTemplate(parse(`npm-{{ KNOTLESS_REF_NAME }}-{{ hashFiles "package-lock.json" }}-{{CI}}`), {
        variables,
        fileHashes,
      }),
      { ok: true, key: "npm-main-ab12-true" },
    );
  });

  it("refuses a variable the run does not set, saying what sets it", () => {
    assert.deepEqual(renderKeyTemplate(parse("x-{{ KNOTLESS_SHA }}"), { variables, fileHashes }), {
      ok: false,
      message: "uses {{ KNOTLESS_SHA }}, which this run does not set (set by --sha)",
    });
    assert.deepEqual(renderKeyTemplate(parse("x-{{ MINE }}"), { variables, fileHashes }), {
      ok: false,
      message: "uses {{ MINE }}, which this run does not set",
    });
  });

  it("refuses a call whose files were not hashed", () => {
    const rendered = renderKeyTemplate(parse(`{{ hashFiles "other" }}`), { variables, fileHashes });
    assert.equal(rendered.ok, false);
  });

  it("refuses a key that renders empty, unprintable or longer than 512 characters, and takes 512", () => {
    const long = new Map([["LONG", "é".repeat(MAX_KEY_LENGTH)]]);
    assert.deepEqual(renderKeyTemplate(parse("{{ LONG }}"), { variables: long, fileHashes }), {
      ok: true,
      key: "é".repeat(512),
    });
    assert.deepEqual(renderKeyTemplate(parse("x{{ LONG }}"), { variables: long, fileHashes }), {
      ok: false,
      message: "renders 513 characters long, more than the 512 a key may have",
    });
    assert.deepEqual(renderKeyTemplate(parse("a{{ NL }}"), { variables: new Map([["NL", "b\nc"]]), fileHashes }), {
      ok: false,
      message: 'renders with the unprintable character "\\n" at character 3: "ab\\nc"',
    });
    assert.deepEqual(renderKeyTemplate(parse("{{ EMPTY }}"), { variables: new Map([["EMPTY", ""]]), fileHashes }), {
      ok: false,
      message: "renders empty",
    });
  });
});

describe("RUN_VARIABLE_SOURCES", () => {
  it("names exactly the variables buildRunVariables makes for runs with full push and pull request triggers", () => {
    const repository = {
      repo: "did:plc:x/r",
      knot: "knot.example",
      repoDid: "did:plc:x",
      repoName: "r",
      defaultBranch: "main",
      pipelineId: "at://did:plc:x/sh.tangled.pipeline/1",
    };
    const push = { event: "push", ref: "refs/heads/main", sha: "abc", ...repository };
    const pull = {
      event: "pull_request",
      branch: "main",
      sha: "abc",
      prSourceBranch: "feature",
      prSourceSha: "def",
      prAction: "opened",
      ...repository,
    };
    const names = new Set(
      [push, pull].flatMap((trigger) =>
        buildRunVariables({ runId: "r", workflowName: "w.yml", trigger }).map((variable) => variable.name),
      ),
    );
    assert.deepEqual(Object.keys(RUN_VARIABLE_SOURCES).sort(), [...names].sort());
  });
});
