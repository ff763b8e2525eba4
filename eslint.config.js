// ESLint: typescript-eslint's recommended rules over the TypeScript sources, with the few rules this codebase decides on itself.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The Node.js globals the plain JavaScript scripts use (the TypeScript files get theirs from @types/node).
const NODE_GLOBALS = Object.fromEntries(
  [
    "process",
    "console",
    "URL",
    "Buffer",
    "setTimeout",
    "clearTimeout",
    "fetch",
    "AbortSignal",
    "AbortController",
    "TextDecoder",
    "TextEncoder",
  ].map((name) => [name, "readonly"]),
);

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "test/fixtures/tangled-corpus/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      // Unused names are noise to a reader; a leading underscore says "deliberately unused".
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // Empty callbacks are how a stream's error is deliberately ignored where `ended` reports it.
      "@typescript-eslint/no-empty-function": "off",
      "no-empty": ["error", { allowEmptyCatch: true }],
      // A `let` assigned once after the closures that read it were made (a stream and its callbacks) stays a `let`.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      // Validators here reject control characters on purpose, by naming them in a character class.
      "no-control-regex": "off",
    },
  },
  {
    // The local cluster is a stand-in API server: it handles arbitrary JSON objects as the real one does.
    // The tests and benchmarks read other programs' JSON answers, whose shape is what they assert.
    files: ["local-cluster/**/*.ts", "test/**/*.ts", "bench/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    files: ["**/*.mjs", "**/*.js"],
    languageOptions: { globals: NODE_GLOBALS },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { ...NODE_GLOBALS, module: "writable", require: "readonly" } },
  },
);
