#!/bin/sh
# The definitions the restructure's hand edits moved, for scripts/restructure/move-export.mjs: run after the edits are
# replayed on newer code, so that importers added since point at the new home too.
set -eu
cd "$(git rev-parse --show-toplevel)"
m() { node scripts/restructure/move-export.mjs "$@"; }
m src/run/run-workflow.ts src/settings/run-settings.ts RunSettings
m src/config/runner-config.ts src/manifests/pod-spec-config.ts PodSecurityProfile PodToleration PodSpecConfig POD_SPEC_CONFIG_KEYS
m src/executor/kubernetes/cache-transfer.ts src/executor/cache-archive.ts CacheTransferError CacheArchiveGate CacheArchive CacheSaveOutcome
m src/cluster/kubectl/kubectl-args.ts src/cluster/permissions.ts collectCallPermissions formatPermissions ApiPermission CallScope
m src/workflow/step-environment.ts src/core/env-var.ts EnvVar ENV_NAME
m src/workflow/workflow-types.ts src/core/env-var.ts EnvVar
m src/core/patterns.ts src/core/env-var.ts ENV_NAME
m src/events/format-event.ts src/core/format-bytes.ts formatBytes
m src/workflow/read-workflow-file.ts src/core/read-bounded-file.ts readBoundedTextFile readBoundedFile FileKind findInvalidUtf8
