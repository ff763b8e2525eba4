// Kubernetes resource quantities (500m, 2, 512Mi, 1e9) as plain numbers, for the scheduler's capacity arithmetic.

const SUFFIX: Record<string, number> = {
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
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+))?$/;

/** The quantity in base units (cores, bytes); undefined when `text` is not a quantity. */
export function parseQuantity(text: string): number | undefined {
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  if (match[3] !== undefined) return value * 10 ** Number(match[3]);
  return value * SUFFIX[match[2] ?? ""]!;
}

/** What a pod asks of a node: the sum of its containers' requests (cores, bytes); absent requests count as 0. */
export function sumPodRequests(
  spec: { containers?: Array<{ resources?: { requests?: Record<string, unknown> } }> } | undefined,
): { cpu: number; memory: number } {
  let cpu = 0;
  let memory = 0;
  for (const c of spec?.containers ?? []) {
    const requests = c.resources?.requests ?? {};
    cpu += parseQuantity(String(requests.cpu ?? "0")) ?? 0;
    memory += parseQuantity(String(requests.memory ?? "0")) ?? 0;
  }
  return { cpu, memory };
}
