// Root's tests of unreadable files run their child as nobody (root reads any file). That needs nobody to reach the
// repository's dist/ and bin/, which a clone into a private directory (`mktemp -d`, mode 0700) does not allow.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./run-cli.js";

/** False when the test can run (not root, or nobody reaches the repository), else why it is skipped. */
export function findNobodySkipReason(): string | false {
  if (process.getuid?.() !== 0) return false;
  const probe = "require('node:fs').accessSync(process.argv[1], require('node:fs').constants.R_OK)";
  const reachable = spawnSync(process.execPath, ["-e", probe, join(REPO_ROOT, "bin", "knotless-runner-k8s.js")], {
    uid: 65534,
    gid: 65534,
  });
  return reachable.status === 0
    ? false
    : `nobody (uid 65534) cannot read ${REPO_ROOT}/bin: the clone is in a directory others may not enter`;
}
