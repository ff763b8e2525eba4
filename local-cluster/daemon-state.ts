// Where a background local cluster records how to reach it: <dir>/state.json.

import { join } from "node:path";

export interface DaemonState {
  pid: number;
  url: string;
  adminUrl: string;
  instanceId: string;
  kubeconfigPath: string;
  startedAt: string;
}

export function formatStatePath(dir: string): string {
  return join(dir, "state.json");
}
