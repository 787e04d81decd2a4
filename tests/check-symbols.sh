#!/bin/sh
# Every symbol libworld.so exports is world_*: nothing internal leaks into the ABI.
set -eu
lib=$1
leaks=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRV]$/ { print $3 }' |
	grep -v '^world_' || true)
echo "1..2"
if nm -D --defined-only "$lib" | grep -q ' T world_strerror$'; then
	echo "ok 1 - libworld exports world_strerror"
else
	echo "not ok 1 - libworld exports world_strerror"
fi
if [ -z "$leaks" ]; then
	echo "ok 2 - libworld exports nothing but world_*"
else
	echo "not ok 2 - libworld leaks:" $leaks
fi
