#!/usr/bin/env bash
# Session 4: re-tunes search spaces with the clean flush, every dtype exhaustively, inside one device call.
# Usage (on the GPU host): tune_spaces.sh NAME DB SECONDS SPACE... ; databases come back without raw samples as
# $OUT/NAME.tgz (with the logs and `ktune best` tables). GPU_TESTS=1 first runs the GPU test binary.
# Since session 6 the one script for this is bench/tune_on_device.sh (same arguments, same outputs).
exec "$(dirname "$0")/../../tune_on_device.sh" "$@"
