#!/bin/sh
# Obtains a hosted tenant cluster's kubeconfig: signs in with socialweb-computer-kcp's oauth-signin.ts, creates or
# reuses the named cluster through the gateway, waits until it is Ready and writes its kubeconfig mode 0600.
#
# ==== THE ASSUMED INTERFACE (the one place; docs/live-proof.md "The assumed sign-in and gateway interface" says the same) ====
# socialweb-computer-kcp's scripts/oauth-signin.ts is not reachable from this project and its interface is not
# public here. This script assumes exactly the following, checks it, and fails naming the expectation that failed.
# If the real script or gateway differ, change run_signin below and scripts/lib/tenant-gateway.mjs, and docs/live-proof.md.
#
# oauth-signin.ts
#   invocation   <tsx> "$KCP_REPO/scripts/oauth-signin.ts" --gateway <URL> --credentials <FILE>
#                run in "$KCP_REPO", stdin /dev/null (it must not prompt). <tsx> is "$KCP_REPO/node_modules/.bin/tsx"
#                (npm ci in the KCP repository), else tsx on PATH. npx is not used: it could fetch a package while a
#                credential is in play.
#   environment  inherited unchanged; this script adds nothing. No secret goes through argv or the environment.
#   <FILE>       the operator's credential file, passed by path; its format is oauth-signin.ts's business. This
#                script requires a regular, non-empty file owned by you with no group or other permission
#                (chmod 600), and reads it only to mask its values in anything it shows.
#   stdout       exactly one JSON object with a non-empty single-line "sessionToken" string; other keys ignored.
#                Kept in a private temp file, never shown.
#   stderr       free-form progress; kept in a private temp file, its last lines shown (masked) only on failure.
#   exit code    0 when signed in; anything else is a failed sign-in.
#   duration     ends on its own within --signin-timeout (default 5m).
# the gateway (base URL: --gateway, or $KNOTLESS_TENANT_GATEWAY; no default, it is the operator's gateway URL)
#   every call   "Authorization: Bearer <sessionToken>", "Accept: application/json"; no redirects are followed
#   GET  /v1/clusters/<name>             200 {"name": "<name>", "status": "<status>", "message"?: "<text>"}; 404: none
#   POST /v1/clusters  {"name": "<name>"} 200, 201 or 202 with the same object; 409 when it exists (then GET)
#   GET  /v1/clusters/<name>/kubeconfig  200 {"kubeconfig": "<kubeconfig text, YAML or JSON>"}
#   status       "Ready": usable; "Failed": final (its message is shown); any other value: not yet, poll again
#   errors       401/403: the session was refused; other 4xx: fail; 5xx and network errors: 3 tries, 2 s apart
# ====================================================================================================================
set -eu
umask 077

EXIT_USAGE=2
EXIT_PREREQUISITE=3
EXIT_SIGNIN=4
# 5: the gateway failed or answered otherwise; 6: the cluster was not Ready in time (both from tenant-gateway.mjs)

# shellcheck disable=SC2016 # the usage text shows its quotes as they are
USAGE='usage: scripts/tenant-kubeconfig.sh --cluster NAME --credentials FILE --gateway URL --kcp-repo DIR [options]

Signs in with socialweb-computer-kcp'"'"'s scripts/oauth-signin.ts, creates the tenant cluster NAME (or reuses it),
waits until it is Ready and writes its kubeconfig, mode 0600, to DIR/NAME.kubeconfig. Prints that path on stdout
and nothing else; progress goes to stderr. No credential, token or key is ever printed or kept elsewhere.

  --cluster NAME         the tenant cluster (a DNS-1123 label)       [$KNOTLESS_TENANT_CLUSTER]
  --credentials FILE     the credential file for oauth-signin.ts, mode 0600  [$KNOTLESS_TENANT_CREDENTIALS]
  --gateway URL          the operator'"'"'s gateway URL; https, or http on 127.0.0.1/localhost only
                         (no default)                                [$KNOTLESS_TENANT_GATEWAY]
  --kcp-repo DIR         a checkout of socialweb-computer-kcp, with npm ci done  [$KCP_REPO]
  --out-dir DIR          where the kubeconfig goes (made mode 0700)  [default: ~/.tmp/knotless-tenant]
  --ready-timeout DUR    how long to wait for Ready (scale-up takes minutes)  [default: 15m]
  --poll-interval DUR    between status reads                        [default: 10s]
  --signin-timeout DUR   how long oauth-signin.ts may take           [default: 5m]
  --no-create            fail if the cluster does not exist instead of creating it
  -h, --help             this help

DUR is a number of seconds with an optional s, m or h suffix: 90, 90s, 15m, 1h, 0.5s.
The interface assumed of oauth-signin.ts and of the gateway is at the top of this script and in docs/live-proof.md.

Exit codes:
  0  the kubeconfig was written
  2  bad usage (unknown option, missing or malformed value)
  3  a prerequisite is missing: node, tsx, the KCP repository or its oauth-signin.ts, the credential file or its
     permissions; the message says which and how to get it
  4  the sign-in failed or oauth-signin.ts behaved other than assumed
  5  the gateway failed or answered other than assumed, or the cluster reports Failed
  6  the cluster was not Ready within --ready-timeout'

say() { printf 'tenant-kubeconfig: %s\n' "$*" >&2; }
die() {
  code=$1
  shift
  say "$*"
  exit "$code"
}
usage_error() { die "$EXIT_USAGE" "$* (see --help)"; }
need_value() { [ "$2" -ge 2 ] || usage_error "$1 needs a value"; }

check_duration() {
  value=$2
  case $value in *[smh]) value=${value%?} ;; esac
  case $value in
    '' | .* | *. | *[!0-9.]* | *.*.*) usage_error "$1 expects a duration such as 90s, 15m or 1h (got \"$2\")" ;;
  esac
}

cluster=${KNOTLESS_TENANT_CLUSTER:-}
credentials=${KNOTLESS_TENANT_CREDENTIALS:-}
gateway=${KNOTLESS_TENANT_GATEWAY:-}
kcp_repo=${KCP_REPO:-}
out_dir=
ready_timeout=15m
poll_interval=10s
signin_timeout=5m
no_create=

while [ $# -gt 0 ]; do
  case $1 in
    -h | --help)
      printf '%s\n' "$USAGE"
      exit 0
      ;;
    --cluster) need_value "$1" $#; cluster=$2; shift ;;
    --credentials) need_value "$1" $#; credentials=$2; shift ;;
    --gateway) need_value "$1" $#; gateway=$2; shift ;;
    --kcp-repo) need_value "$1" $#; kcp_repo=$2; shift ;;
    --out-dir) need_value "$1" $#; out_dir=$2; shift ;;
    --ready-timeout) need_value "$1" $#; ready_timeout=$2; shift ;;
    --poll-interval) need_value "$1" $#; poll_interval=$2; shift ;;
    --signin-timeout) need_value "$1" $#; signin_timeout=$2; shift ;;
    --no-create) no_create=1 ;;
    *) usage_error "unknown option \"$1\"" ;;
  esac
  shift
done

[ -n "$cluster" ] || usage_error "--cluster NAME is required (or KNOTLESS_TENANT_CLUSTER)"
case $cluster in
  *[!a-z0-9-]* | -* | *-) usage_error "--cluster expects a DNS-1123 label (lowercase letters, digits, '-'), got \"$cluster\"" ;;
esac
[ ${#cluster} -le 63 ] || usage_error "--cluster is longer than 63 characters"
[ -n "$credentials" ] || usage_error "--credentials FILE is required (or KNOTLESS_TENANT_CREDENTIALS)"
[ -n "$gateway" ] || usage_error "--gateway URL is required (or KNOTLESS_TENANT_GATEWAY): the operator's gateway URL; there is no default"
case $gateway in
  https://?*) ;;
  http://127.0.0.1 | http://127.0.0.1[:/]* | http://localhost | http://localhost[:/]*) ;;
  http://*) usage_error "--gateway must be https (plain http is accepted only on 127.0.0.1 or localhost: the session token would travel in clear)" ;;
  *) usage_error "--gateway expects an https:// URL, got \"$gateway\"" ;;
esac
check_duration --ready-timeout "$ready_timeout"
check_duration --poll-interval "$poll_interval"
check_duration --signin-timeout "$signin_timeout"

# ---- prerequisites: each one fails at once, saying which and how to get it -----------------------------------------
command -v node >/dev/null 2>&1 ||
  die "$EXIT_PREREQUISITE" "node is not on PATH: install Node.js 20 or later (https://nodejs.org, or apt-get install nodejs)"
[ -n "$kcp_repo" ] ||
  die "$EXIT_PREREQUISITE" "the socialweb-computer-kcp repository is not given: clone it, run npm ci in it, and set KCP_REPO=/path/to/socialweb-computer-kcp (or --kcp-repo)"
[ -d "$kcp_repo" ] || die "$EXIT_PREREQUISITE" "KCP repository $kcp_repo is not a directory: set KCP_REPO (or --kcp-repo) to a checkout of socialweb-computer-kcp"
kcp_repo=$(CDPATH='' cd -- "$kcp_repo" && pwd) # oauth-signin.ts runs in it: every path it is given is absolute
signin_script="$kcp_repo/scripts/oauth-signin.ts"
[ -f "$signin_script" ] ||
  die "$EXIT_PREREQUISITE" "$signin_script not found: KCP_REPO (or --kcp-repo) must name a checkout of socialweb-computer-kcp that has scripts/oauth-signin.ts"
if [ -x "$kcp_repo/node_modules/.bin/tsx" ]; then
  tsx="$kcp_repo/node_modules/.bin/tsx"
elif command -v tsx >/dev/null 2>&1; then
  tsx=$(command -v tsx)
else
  die "$EXIT_PREREQUISITE" "tsx not found (neither $kcp_repo/node_modules/.bin/tsx nor on PATH): run npm ci in $kcp_repo, or npm install -g tsx"
fi
[ -e "$credentials" ] || die "$EXIT_PREREQUISITE" "credential file $credentials does not exist: create it (the credentials oauth-signin.ts signs in with) and chmod 600 it"
[ -f "$credentials" ] || die "$EXIT_PREREQUISITE" "credential file $credentials is not a regular file"
[ -r "$credentials" ] || die "$EXIT_PREREQUISITE" "credential file $credentials cannot be read by you"
[ -s "$credentials" ] || die "$EXIT_PREREQUISITE" "credential file $credentials is empty"
case $credentials in /*) ;; *) credentials="$(pwd)/$credentials" ;; esac
# ls -ldn: "-rw------- 1 UID GID ..." (POSIX); the mode and owner only, never the content.
set -f
# shellcheck disable=SC2046 # split on purpose: the fields of ls -l
set -- $(ls -ldn -- "$credentials")
set +f
case $1 in
  -???------*) ;;
  *) die "$EXIT_PREREQUISITE" "credential file $credentials is accessible to group or others (mode $1): chmod 600 $credentials" ;;
esac
[ "$3" = "$(id -u)" ] || die "$EXIT_PREREQUISITE" "credential file $credentials is owned by uid $3, not by you (uid $(id -u)): chown it or use your own copy"
[ -n "$no_create" ] && no_create_flag=--no-create || no_create_flag=
if command -v timeout >/dev/null 2>&1; then with_timeout="timeout $signin_timeout"; else with_timeout=; fi

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
[ -n "$out_dir" ] || out_dir="${HOME:?HOME is not set: pass --out-dir}/.tmp/knotless-tenant"
mkdir -p -- "$out_dir" # new directories are 0700 (umask 077); an existing one is left as it is
out_dir=$(CDPATH='' cd -- "$out_dir" && pwd)
out="$out_dir/$cluster.kubeconfig"

# ---- private temp files (mode 0600 under a 0700 directory), removed on every exit -----------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/tenant-kubeconfig.XXXXXX")
cleanup() { rm -rf -- "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The one call of oauth-signin.ts (the interface above). Its stdout and stderr go to private files.
run_signin() {
  (cd -- "$kcp_repo" && $with_timeout "$tsx" "$signin_script" --gateway "$gateway" --credentials "$credentials") \
    </dev/null >"$work/signin.stdout" 2>"$work/signin.stderr"
}

show_signin_stderr() {
  [ -s "$work/signin.stderr" ] || return 0
  say "the last lines oauth-signin.ts wrote on stderr (credential values and tokens masked):"
  node "$here/lib/tenant-gateway.mjs" show-masked --file "$work/signin.stderr" --credentials "$credentials" \
    --signin-stdout "$work/signin.stdout" || true
}

say "signing in with $signin_script (gateway $gateway)"
signin_code=0
run_signin || signin_code=$?
if [ "$signin_code" -ne 0 ]; then
  if [ -n "$with_timeout" ] && [ "$signin_code" -eq 124 ]; then
    show_signin_stderr
    die "$EXIT_SIGNIN" "oauth-signin.ts did not finish within --signin-timeout $signin_timeout (expected it to end on its own, without a prompt: its stdin is closed)"
  fi
  show_signin_stderr
  die "$EXIT_SIGNIN" "oauth-signin.ts exited $signin_code (expected 0 and one JSON object with a sessionToken on stdout)"
fi

code=0
# shellcheck disable=SC2086 # $no_create_flag is empty or one flag
node "$here/lib/tenant-gateway.mjs" fetch --signin-stdout "$work/signin.stdout" --credentials "$credentials" \
  --gateway "$gateway" --cluster "$cluster" --out "$out" --ready-timeout "$ready_timeout" \
  --poll-interval "$poll_interval" $no_create_flag || code=$?
if [ "$code" -ne 0 ]; then
  [ "$code" -ne "$EXIT_SIGNIN" ] || show_signin_stderr
  exit "$code"
fi
printf '%s\n' "$out"
say "export KUBECONFIG=$out"
