// The RSS of a process and of all its descendants, read from /proc: what the benchmarks count as one runner's memory.
import { readdirSync, readFileSync } from "node:fs";

function readStatus(pid: number): { ppid: number; rssKiB: number; name: string } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
    const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? "?";
    return { ppid, rssKiB, name };
  } catch {
    return undefined;
  }
}

/** The RSS of `root` and of every live descendant, in KiB, and which descendants there are (pid -> name). */
export function sampleTree(root: number): { total: number; own: number; pids: Map<number, string> } {
  const all = new Map<number, { ppid: number; rssKiB: number; name: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const status = readStatus(Number(entry));
    if (status) all.set(Number(entry), status);
  }
  const inTree = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, s] of all)
      if (!inTree.has(pid) && inTree.has(s.ppid)) {
        inTree.add(pid);
        grew = true;
      }
  }
  let total = 0;
  const pids = new Map<number, string>();
  for (const pid of inTree) {
    const s = all.get(pid);
    if (!s) continue;
    total += s.rssKiB;
    if (pid !== root) pids.set(pid, s.name);
  }
  return { total, own: all.get(root)?.rssKiB ?? 0, pids };
}
