// What a service applies to every run it starts (serve, the mill executor), resolved from its flags at the CLI edge.
import type { ClusterTarget } from "../cluster/cluster.js";
import type { RunnerConfigSource } from "../config/runner-config.js";
import type { ProcessIdentity } from "../manifests/owner.js";
import type { GitSetting } from "../transfer/git-checkout.js";
import type { HostTarSetting } from "../transfer/host-tar.js";

/** What the service applies to every run. */
export interface RunDefaults {
  readonly target: ClusterTarget;
  readonly podTimeoutMs: number;
  /** Each run's pod stops itself after this long without a runner exec (`--pod-idle-timeout`); absent: 10 min. */
  readonly podIdleTimeoutMs?: number;
  readonly maxOutputBytes: number;
  readonly maxLogBytes: number;
  readonly keepWarm?: { readonly seconds: number; readonly maxWarm: number };
  readonly claimWarm?: boolean;
  readonly hostTar?: HostTarSetting;
  readonly owner?: ProcessIdentity;
  /** The Nixery registry of nixery workflows. */
  readonly nixery?: string;
  /** The host's git, for `checkout.git`; absent: such a submission is refused (501). */
  readonly git?: GitSetting;
  /** The runner configuration (`--config`) every workflow is resolved against: limits, engines, the pod's keys; absent: the defaults. */
  readonly runner?: RunnerConfigSource;
  /** Where the workflows' caches live (`--cache-dir`, `--cache-pvc`), keyed per repository; `off`: none restored or saved. */
  readonly caches?: {
    readonly off: boolean;
    readonly store: { readonly kind: "dir"; readonly dir: string } | { readonly kind: "pvc"; readonly claim: string };
    readonly maxBytes: number;
  };
  /** The one host directory (`--checkout-root`, its real path) under which checkout.dir and sharedSteps.dir may name a directory; absent: neither is taken. */
  readonly checkoutRoot?: string;
  /** `--allow-http-git`: checkout.git.url may be http:// as well as https://. */
  readonly allowHttpGit?: boolean;
}
