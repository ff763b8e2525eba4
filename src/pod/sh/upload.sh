# The upload (the helper is not in the pod yet; rendered by buildUploadCommand in src/pod/helper-script.ts).
# stdin: a tar extracted at / (entries work/..., steps/..., knotless/..., the receipt last); whatever tar leaves unread
# is drained, so the sender never writes into a closed pipe or blocks on a full one.
# stdout: the receipt it extracted (an empty line when there is none: an integrity failure, not a failed exec), then
# the number of lines `find WORK_DIR STEPS_DIR` prints. Exit: a failing tar's code.
# Settings: RECEIPT_PATH, WORK_DIR, STEPS_DIR; beat.sh's.
beat_while_exec_runs
tar -xf - -C /
rc=$?
cat > /dev/null
[ $rc = 0 ] || exit $rc
cat "$RECEIPT_PATH" 2>/dev/null || echo
find "$WORK_DIR" "$STEPS_DIR" | wc -l
