// The `environment` map of a workflow, a step or a service: variable names as POSIX shells take them, values as written.
import { ENV_NAME, type EnvVar } from "../core/env-var.js";
import { readEntries, type FieldReader } from "./field-readers.js";
import { describeNode, isNullValue, readScalarText, reportError, resolveAlias } from "./read-context.js";

/** `environment`: names as POSIX shells take them; each value a scalar as written, an empty one "". */
export const readEnvironment: FieldReader<EnvVar[]> = (ctx, node, at, path) => {
  const variables: EnvVar[] = [];
  const position = readEntries(
    ctx,
    node,
    at,
    path,
    "a map of variable names to values",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (!ENV_NAME.test(key)) {
        reportError(
          ctx,
          keyAt,
          keyPath,
          `expected a variable name of letters, digits and _ that does not start with a digit, found ${JSON.stringify(key)}`,
        );
        return;
      }
      const resolved = resolveAlias(ctx, value);
      if (isNullValue(ctx, resolved)) {
        variables.push({ name: key, value: "" });
        return;
      }
      const text = readScalarText(ctx, resolved);
      if (text === undefined)
        reportError(
          ctx,
          valueAt,
          keyPath,
          `expected a string, number or boolean, found ${describeNode(ctx, resolved)}`,
        );
      else variables.push({ name: key, value: text });
    },
  );
  return position === undefined ? undefined : variables;
};
