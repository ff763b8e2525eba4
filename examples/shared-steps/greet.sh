#!/bin/sh
# A shared step script, streamed into /steps.
echo "hello from a shared step in $(pwd)"
