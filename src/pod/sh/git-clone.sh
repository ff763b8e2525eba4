# The in-pod clone of a git checkout, Tangled's way (rendered by buildGitCloneCommand in src/pod/git-clone-script.ts):
# init, a fetch of exactly that commit at a depth (with every tag too when asked, as spindle's `--tags`), checkout of
# FETCH_HEAD. No transport that runs a command (ext::), no prompt for a password, no secret in argv.
# Arguments: $1 URL, $2 SHA, $3 DEPTH, $4 "1" for submodules, $5 the directory, $6 "1" for tags.
# stdout, last: `CLONE_DONE_TAG SHA` once HEAD is the commit, or `CLONE_FAILED_TAG STEP EXIT` (STEP: cd, init, remote,
# fetch, checkout, submodules, head) and exit 1. Settings: CLONE_DONE_TAG, CLONE_FAILED_TAG.
export GIT_TERMINAL_PROMPT=0 GIT_ALLOW_PROTOCOL=https:http:git:ssh:file
cd "$5" || { echo "$CLONE_FAILED_TAG cd 1"; exit 1; }
run() { s=$1; shift; "$@" || { c=$?; echo "$CLONE_FAILED_TAG $s $c"; exit 1; }; }
run init git init -q .
run remote git remote add origin "$1"
tags=--no-tags
if [ "$6" = 1 ]; then tags=--tags; fi
run fetch git fetch -q "$tags" --depth "$3" origin "$2"
run checkout git -c advice.detachedHead=false checkout -q --detach FETCH_HEAD
if [ "$4" = 1 ]; then run submodules git submodule update -q --init --recursive --depth "$3"; fi
head=$(git rev-parse HEAD) || { echo "$CLONE_FAILED_TAG head 1"; exit 1; }
[ "$head" = "$2" ] || { echo "$CLONE_FAILED_TAG head 1"; exit 1; }
echo "$CLONE_DONE_TAG $head"
