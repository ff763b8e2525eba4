// Kubernetes resource quantities (500m, 2, 512Mi, 1e9) as numbers, to tell whether a placeholder's requests cover a run's.

const SUFFIX: Readonly<Record<string, number>> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(?:(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)|e(\d+))?$/;

/** The quantity in base units (cores, bytes); undefined when `text` is not a non-negative quantity. */
export function parseQuantity(text: string): number | undefined {
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  return match[3] !== undefined ? value * 10 ** Number(match[3]) : value * SUFFIX[match[2] ?? ""]!;
}

/** Whether `have` is at least `need` (both quantities); false when either is not one. Compares cpu to the millicore. */
export function coversQuantity(have: string, need: string): boolean {
  const a = parseQuantity(have);
  const b = parseQuantity(need);
  if (a === undefined || b === undefined) return false;
  return Math.round(a * 1000) >= Math.round(b * 1000);
}
