// This process as the cluster records it (a run's owner, a cancel's requester): resolved here, at the CLI edge.
import { hostname } from "node:os";
import type { ProcessIdentity } from "../manifests/owner.js";

export function resolveProcessIdentity(): ProcessIdentity {
  return { host: hostname(), pid: process.pid };
}
