#!/usr/bin/env bash
# Session 5: tunes search spaces with the clean flush inside one device call, optionally narrowed.
# Usage (on the GPU host): tune.sh NAME DB SECONDS SPACE[:FILTER...]... where FILTER is ktune tune's own narrowing
# (e.g. linear_int4:--dtype=bf16:--problem=M=1 : each ':' becomes a space).
# Since session 6 the one script for this is bench/tune_on_device.sh (same arguments, same outputs).
exec "$(dirname "$0")/../../tune_on_device.sh" "$@"
