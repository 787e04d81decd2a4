# Shared by every worldrun-*.bats file: paths, bats-assert, and waits
# that poll with a bound instead of sleeping a fixed time.
bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

: "${WORLDRUN:?run these tests through meson test}"
: "${HELPERS:?run these tests through meson test}"
PATH="$HELPERS:$(dirname "$WORLDRUN"):$PATH"
export PATH

# wait_until SECONDS COMMAND...: poll COMMAND every 50 ms until it
# succeeds; fail after SECONDS.
wait_until() {
	local limit=$1 i=0
	shift
	while ! "$@"; do
		i=$((i + 1))
		if [ "$i" -ge $((limit * 20)) ]; then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# alive PID: the process exists and is not a zombie.
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

# all_gone FILE: no pid listed in FILE (one per line) is alive.
all_gone() {
	local pid
	while read -r pid; do
		[ -z "$pid" ] && continue
		alive "$pid" && return 1
	done <"$1"
	return 0
}

# pids_in FILE N: FILE lists at least N pids.
pids_in() {
	[ -f "$1" ] && [ "$(grep -c . "$1")" -ge "$2" ]
}
