// The hard bounds on a cpu or memory request that no configuration lifts: past them a value is a mistake, not a plan.
import { parseQuantity } from "../core/quantity.js";

/** The most cores a run may ask for: more than the largest nodes clouds sell (about 900 vCPUs). */
export const HARD_MAX_CPU = "1024";
/** The most memory a run may ask for: more than the largest nodes clouds sell (about 32 TiB). */
export const HARD_MAX_MEMORY = "64Ti";
/** The least: below 1m a cpu request rounds to nothing; below 4Mi no container starts. */
export const HARD_MIN_CPU = "1m";
export const HARD_MIN_MEMORY = "4Mi";

/**
 * Why `quantity` (a valid Kubernetes quantity) is no sane `kind` request, or undefined when it is one: at least
 * HARD_MIN_* and at most HARD_MAX_*, both said in the message.
 */
export function checkResourceBounds(kind: "cpu" | "memory", quantity: string): string | undefined {
  const value = parseQuantity(quantity);
  const [min, max] = kind === "cpu" ? [HARD_MIN_CPU, HARD_MAX_CPU] : [HARD_MIN_MEMORY, HARD_MAX_MEMORY];
  const range = `from ${min} to ${max}${kind === "cpu" ? " cores" : ""}`;
  if (value === undefined) return `expected a ${kind} quantity ${range}, found ${JSON.stringify(quantity)}`;
  if (value < parseQuantity(min)! || value > parseQuantity(max)!)
    return `${kind} ${quantity} is outside the bounds any run may ask for (${range})`;
  return undefined;
}
