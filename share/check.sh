#!/bin/sh
# Set up, build and run every test suite; print "N passed, N failed".
# With --sanitize, build and test with AddressSanitizer and UBSan instead;
# with --fuzz, build with clang and run each fuzz target for a few seconds
# (suite 'fuzz', tests/fuzz). Suite 'long' never runs here.
# Exits non-zero if a test failed (or, under CI=true, any test or case skipped).
set -u
cd "$(dirname "$0")/.."

dir=build
opts=""
setup=""
suites="--no-suite long"
build_all=true
case "${1:-}" in
--sanitize)
	dir=build-sanitize
	opts="-Db_sanitize=address,undefined -Db_lundef=false"
	export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
	# What libfabric and libpmix themselves leak, and nothing of ours
	# (see the file); not listed on stderr, which tests read (every
	# worldrun holds a PMIx server).
	export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"
	;;
--fuzz)
	dir=build-fuzz
	opts="-Dfuzz=true"
	setup=--fuzz
	suites="--suite fuzz"
	export CC=clang # read when $dir is first set up
	# meson test builds what the fuzz targets need, and no more.
	build_all=false
	;;
esac

./share/setup.sh $setup || exit 1
if [ -d "$dir" ]; then
	meson setup --reconfigure $opts "$dir" >/dev/null || exit 1
else
	meson setup $opts "$dir" >/dev/null || exit 1
fi
if [ "$build_all" = true ]; then
	ninja -C "$dir" || exit 1
fi
# A run that could not build its tests leaves no log of an earlier one.
rm -f "$dir/meson-logs/testlog.json"
meson test -C "$dir" $suites --print-errorlogs --num-processes 2 >"$dir/test-output.txt" 2>&1
tail -n 20 "$dir/test-output.txt"
python3 share/count-tests.py "$dir/meson-logs/testlog.json"
