// The shapes of the plain values the runner accepts: Kubernetes quantities, names, image references, byte sizes.
import { InputError } from "./errors.js";

/** A Kubernetes resource quantity: 500m, 1, 1.5, 512Mi, 2G. */
export const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e\d+)?$/;
/** A DNS-1123 label: namespaces, and the names of the objects the runner makes. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A container image reference, loosely: what a registry could serve. */
export const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]{0,1023}$/;

const SIZE = /^(\d+)(K|M|G|Ki|Mi|Gi)?$/;
const SIZE_UNIT: Record<string, number> = { K: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** Parses a byte count (536870912, 512Mi, 1G); undefined when it is not one. */
export function parseSize(text: string): number | undefined {
  const match = SIZE.exec(text);
  return match ? Number(match[1]) * (match[2] ? SIZE_UNIT[match[2]]! : 1) : undefined;
}

/** Parses a byte count or throws InputError naming `what` (a flag, or `file:line:col: key`). */
export function readSize(text: string, what: string): number {
  const size = parseSize(text);
  if (size === undefined)
    throw new InputError(`${what} expects a byte count such as 536870912, 512Mi or 1G, got "${text}"`);
  return size;
}
