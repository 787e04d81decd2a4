#!/bin/sh
# Run one libFuzzer target and report it as one TAP case, with its
# executions, time, corpus and findings:
#   run.sh NAME PROGRAM SEEDS WORKDIR SECONDS
# SECONDS "long" means $WORLD_FUZZ_SECONDS (default 600). The corpus
# grows in WORKDIR/corpus-NAME (the seeds in SEEDS are only read), and a
# finding is written as WORKDIR/NAME-crash-..., -leak-..., -timeout-...
# with the log in WORKDIR/NAME.log.
set -u
name=$1 prog=$2 seeds=$3 work=$4 secs=$5
if [ "$secs" = long ]; then
	secs=${WORLD_FUZZ_SECONDS:-600}
fi
corpus=$work/corpus-$name
log=$work/$name.log
mkdir -p "$corpus" || exit 1
dict=""
if [ -f "$seeds.dict" ]; then
	dict="-dict=$seeds.dict"
fi

echo "1..1"
# -timeout: one input taking that long is a hang; -rss_limit_mb: a leak
# or a runaway allocation. Parsers print usage errors: -close_fd_mask
# keeps them out of the log, libFuzzer's own report still gets there.
"$prog" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -close_fd_mask=3 $dict \
	-artifact_prefix="$work/$name-" "$corpus" "$seeds" >"$log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
took=$(sed -n "s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p" "$log")
size=$(find "$corpus" -type f | wc -l)
found=$(sed -n "s/.*Test unit written to //p" "$log" | tr '\n' ' ')
summary="fuzz-$name: ${runs:-0} runs in ${took:-?} s, corpus $size inputs"
if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
	echo "ok 1 - $summary, no findings"
	exit 0
fi
echo "not ok 1 - $summary, exit $rc, findings: ${found:-none written}"
tail -n 60 "$log" >&2
exit 1
