// One line of doctor's report: what was checked, how it went, and the sentence that says so.

export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface DoctorCheck {
  /** `kubectl`, `cluster`, `namespace`, `permission jobs.batch`, `credential`, `nodes`. */
  readonly name: string;
  readonly status: CheckStatus;
  readonly summary: string;
}

const RANK: Record<CheckStatus, number> = { skip: 0, ok: 1, warn: 2, fail: 3 };

/** The worse of two statuses (fail over warn over ok over skip). */
export function worseStatus(a: CheckStatus, b: CheckStatus): CheckStatus {
  return RANK[a] >= RANK[b] ? a : b;
}
