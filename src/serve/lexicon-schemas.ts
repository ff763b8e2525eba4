// The runner service's lexicons (lexicons/dev/knotless/runner/ and the check record), loaded once on first use, and the checks of XRPC inputs and outputs against them.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Lexicons } from "@atproto/lexicon";
import { XrpcError } from "./http-errors.js";

/** The NSIDs of the service's methods. */
export const NSID = {
  submitRun: "dev.knotless.runner.submitRun",
  getRun: "dev.knotless.runner.getRun",
  listRuns: "dev.knotless.runner.listRuns",
  cancelRun: "dev.knotless.runner.cancelRun",
  getOutputs: "dev.knotless.runner.getOutputs",
} as const;

/**
 * Errors any call may answer, which the lexicons leave to XRPC itself rather than list per method: a request the
 * lexicon refuses, a missing token, an unknown method, a bug (500), and a cluster failing under the call (502).
 */
export const ANY_CALL_ERRORS: readonly string[] = [
  "InvalidRequest",
  "AuthenticationRequired",
  "MethodNotImplemented",
  "InternalServerError",
  "ClusterError",
];

/** The lexicons folder of the package: found upward from this module, which runs from dist/src/serve/ or from the CLI bundle in dist/cli/. */
export function findLexiconDir(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (let up = 0; up < 6; up += 1) {
    if (existsSync(join(dir, "lexicons", "dev", "knotless", "check.json"))) return join(dir, "lexicons");
    dir = dirname(dir);
  }
  throw new Error(`the lexicons folder (lexicons/dev/knotless) is not above ${from}`);
}

/** Every lexicon document the service uses, parsed. */
export function readLexiconDocuments(dir: string = findLexiconDir()): unknown[] {
  const runner = join(dir, "dev", "knotless", "runner");
  const files = [
    join(dir, "dev", "knotless", "check.json"),
    ...readdirSync(runner)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => join(runner, f)),
  ];
  return files.map((file) => JSON.parse(readFileSync(file, "utf8")) as unknown);
}

/** The checks the router makes: params and input throw XrpcError 400 InvalidRequest naming the field; the others the library's ValidationError. */
export interface LexiconChecks {
  /** The method's kind ("query" or "procedure"), undefined for an NSID the lexicons do not define. */
  methodType(nsid: string): "query" | "procedure" | undefined;
  /** Query parameters as strings, coerced to the types the lexicon declares, then validated. */
  params(nsid: string, raw: Readonly<Record<string, string>>): Record<string, unknown>;
  input(nsid: string, body: unknown): unknown;
  output(nsid: string, body: unknown): unknown;
  /** A value of one of the defs of dev.knotless.runner.defs (statusEvent, logLine), or the check record. */
  def(ref: "statusEvent" | "logLine" | "runView" | "streamError" | "streamRefused", value: unknown): void;
  /** The error names a method's lexicon declares (ANY_CALL_ERRORS aside). */
  errors(nsid: string): readonly string[];
  /** The `error` names a stream def (streamError: a stream ended early; streamRefused: one refused before it began) knows. */
  streamErrors(ref: "streamError" | "streamRefused"): readonly string[];
  record(value: unknown): void;
}

let loaded: Promise<LexiconChecks> | undefined;

/** The lexicons, with @atproto/lexicon loaded on first use only: ~260 ms of CPU the CLI's other commands never pay. */
export function loadLexicons(): Promise<LexiconChecks> {
  loaded ??= import("@atproto/lexicon").then(({ Lexicons: Lex }) =>
    buildChecks(new Lex(readLexiconDocuments() as never)),
  );
  return loaded;
}

function buildChecks(lexicons: Lexicons): LexiconChecks {
  const main = (
    nsid: string,
  ):
    | {
        type?: string;
        parameters?: { properties?: Record<string, { type?: string }> };
        errors?: ReadonlyArray<{ name: string }>;
      }
    | undefined => lexicons.getDef(`lex:${nsid}#main`) as never;
  return {
    methodType(nsid) {
      const type = main(nsid)?.type;
      return type === "query" || type === "procedure" ? type : undefined;
    },
    params(nsid, raw) {
      const declared = main(nsid)?.parameters?.properties ?? {};
      const coerced: Record<string, unknown> = {};
      for (const [name, text] of Object.entries(raw)) {
        const type = declared[name]?.type;
        coerced[name] =
          type === "integer" && /^-?\d+$/.test(text)
            ? Number(text)
            : type === "boolean" && (text === "true" || text === "false")
              ? text === "true"
              : text;
      }
      return refuseInvalid(() => lexicons.assertValidXrpcParams(nsid, coerced) ?? {});
    },
    input: (nsid, body) => refuseInvalid(() => lexicons.assertValidXrpcInput(nsid, body)),
    output: (nsid, body) => lexicons.assertValidXrpcOutput(nsid, body),
    def(ref, value) {
      const checked = lexicons.validate(`dev.knotless.runner.defs#${ref}`, value);
      if (!checked.success) throw checked.error;
    },
    record: (value) => lexicons.assertValidRecord("dev.knotless.check", value),
    errors: (nsid) => (main(nsid)?.errors ?? []).map((error) => error.name),
    streamErrors(ref) {
      const def = lexicons.getDef(`lex:dev.knotless.runner.defs#${ref}`) as
        { properties?: { error?: { knownValues?: string[] } } } | undefined;
      return def?.properties?.error?.knownValues ?? [];
    },
  };
}

/** A request the lexicon refuses is the client's error (400), where an output it refuses is ours (500). */
function refuseInvalid<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw new XrpcError(400, "InvalidRequest", error instanceof Error ? error.message : String(error));
  }
}
