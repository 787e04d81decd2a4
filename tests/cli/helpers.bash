# Shared by every worldrun-*.bats file: paths, bats-assert, and waits
# that poll with a bound instead of sleeping a fixed time.
bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

: "${WORLDRUN:?run these tests through meson test}"
: "${HELPERS:?run these tests through meson test}"
PATH="$HELPERS:$(dirname "$WORLDRUN"):$(dirname "${WORLDCTL:-$WORLDRUN}"):$PATH"
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

# PENDING_SH: sh code for the ranks' scripts, which defines
# wait_pending N: wait (bounded, 30 s) until the job's registry holds N
# waits, as its stats say.
PENDING_SH='wait_pending() {
	i=0
	until wr-regpoke hello send "{\"op\":\"stats\",\"id\":1}" read |
		grep -q "\"pending\":$1,"; do
		i=$((i + 1))
		[ "$i" -lt 600 ] || return 1
		sleep 0.05
	done
}'

# world_prog NAME: tests/world's prog-NAME, built beside worldrun, in
# PROG (exported, for the ranks' scripts).
world_prog() {
	PROG="$(dirname "$WORLDRUN")/../../tests/world/prog-$1"
	[ -x "$PROG" ] || fail "not built: $PROG"
	export PROG
}

# too_big_to_allocate: for a test whose job must fail to allocate the
# 1 TiB that a frame announces (WORLD_BLOB_MAX=1024G allows it): skip
# where such a malloc would succeed, and let AddressSanitizer's malloc
# return NULL, as glibc's does, rather than abort. ASan then warns that
# it failed: its reports go to files in the test's directory, where
# show_failure finds them, not into the output the test checks.
too_big_to_allocate() {
	if [ "$(cat /proc/sys/vm/overcommit_memory)" = 1 ]; then
		skip "vm.overcommit_memory=1: a malloc of 1 TiB would succeed here"
	fi
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1"
	export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$BATS_TEST_TMPDIR/sanitizer"
}

# trees_in_tmp: the trees the binaries and tests live in that are under
# /tmp, one per line: a test host with a /tmp of its own must still see
# them at their paths (netns.bash, wr-rsh's WR_RSH_KEEP).
trees_in_tmp() {
	local d
	for d in "$(readlink -f "$SRCDIR")" "$(dirname "$(dirname "$(dirname "$(readlink -f "$WORLDRUN")")")")"; do
		case $d in /tmp/*) echo "$d" ;; esac
	done | sort -u
}

# alive PID: the process exists and is not a zombie.
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

# state PID: the one-letter state in /proc/PID/stat (Z: a zombie, T:
# stopped).
state() {
	awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null
}

# all_in_state STATE PID...: every PID is in STATE.
all_in_state() {
	local want=$1 pid

	shift
	for pid in "$@"; do
		[ "$(state "$pid")" = "$want" ] || return 1
	done
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

# gone PID: PID has exited (or is a zombie waiting to be reaped).
gone() {
	! alive "$1"
}

# wait_job SECONDS PID: wait (bounded) for background job PID to end and
# return its exit status.
wait_job() {
	wait_until "$1" gone "$2" || return 99
	wait "$2"
}

# procs_with VAR=VALUE: the pids of live processes (but the test's own
# shells) whose environment holds VAR=VALUE.
procs_with() {
	local f pid

	for f in $(grep -lasF "$1" /proc/[0-9]*/environ); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		if [ "$pid" != "$$" ] && [ "$pid" != "$BASHPID" ] && alive "$pid"; then
			echo "$pid"
		fi
	done
}

# job_procs ID: the pids of live processes whose environment holds
# WORLD_JOBID=ID.
job_procs() {
	procs_with "WORLD_JOBID=$1"
}

# no_job_procs ID: no live process carries WORLD_JOBID=ID.
no_job_procs() {
	[ -z "$(job_procs "$1")" ]
}

# guardians_of PID: the children of PID that run the worldrun binary
# (read with builtins: a fork per process of the host would be slow).
guardians_of() {
	local d line fields exe

	exe=$(readlink -f "$WORLDRUN")
	for d in /proc/[0-9]*; do
		{ read -r line <"$d/stat"; } 2>/dev/null || continue
		read -ra fields <<<"${line##*) }"
		if [ "${fields[1]}" = "$1" ] &&
			[ "$(readlink "$d/exe" 2>/dev/null)" = "$exe" ]; then
			echo "${d#/proc/}"
		fi
	done
}

# show_failure: for a teardown: on a failed test, show worldrun's stderr
# (saved in $BATS_TEST_TMPDIR/err) and any sanitizer report that went
# into the test's files.
show_failure() {
	if [ -n "${BATS_TEST_COMPLETED:-}" ]; then
		return 0
	fi
	if [ -s "$BATS_TEST_TMPDIR/err" ]; then
		echo "-- stderr of worldrun:" >&2
		head -c 2000 "$BATS_TEST_TMPDIR/err" >&2
	fi
	grep -a -h -o -r -m 3 -E '.{0,40}(runtime error|Sanitizer).{0,200}' \
		"$BATS_TEST_TMPDIR" >&2 2>/dev/null || true
}

# finish_job LIMIT: wait at most LIMIT seconds for the background worldrun
# whose pid is in wpid to end; its status goes to wstatus.
finish_job() {
	wait_until "$1" gone "$wpid"
	wstatus=0
	wait "$wpid" || wstatus=$?
	wpid=
}

# peak_rss RSS OUT CMD...: run CMD with its stdout in OUT; its peak RSS in
# KiB goes to the last line of RSS. Its status is CMD's.
peak_rss() {
	local rss=$1 out=$2 pid max=0 hwm st=0
	shift 2
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o "$rss" "$@" >"$out"
		return
	fi
	# Without GNU time: poll its VmHWM until it exits.
	"$@" >"$out" &
	pid=$!
	while alive "$pid"; do
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
		if [ -n "$hwm" ] && [ "$hwm" -gt "$max" ]; then
			max=$hwm
		fi
		sleep 0.02
	done
	wait "$pid" || st=$?
	echo "$max" >"$rss"
	return "$st"
}

# SAN: the sanitizers' settings, for a command run with env -i: in the
# ASan build, LeakSanitizer needs its suppressions (tests/lsan.supp:
# what libpmix keeps after its finalize, in every worldrun).
SAN=()
for _san in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
	[ -z "${!_san:-}" ] || SAN+=("$_san=${!_san}")
done
unset _san

# abort_codes_ok PROG: PROG's abort mode (wr-mpi.c) with 256, 0 and 300
# ends the job with 1, 1 and 44, the line saying both the code and the
# status, whichever MPI the program speaks.
abort_codes_ok() {
	run -1 --separate-stderr worldrun --timeout 60 -n 2 "$1" abort 256
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) called abort with exit code 256 \\(exit status 1\\)"
	run -1 --separate-stderr worldrun --timeout 60 -n 2 "$1" abort 0
	assert_regex "$stderr" "called abort with exit code 0 \\(exit status 1\\)"
	run -44 --separate-stderr worldrun --timeout 60 -n 2 "$1" abort 300
	assert_regex "$stderr" "called abort with exit code 300 \\(exit status 44\\)"
}

# needs_torch: Debian's torch under /usr/bin/python3 (the python3 first
# on PATH may be another build); CI installs it, so there a skip fails.
needs_torch() {
	if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "CI installs python3-torch: this test must not skip"
		skip "needs torch under /usr/bin/python3 (python3-torch)"
	fi
}

# world_python: PY, an array that runs Python with the world package of
# this build (and, in the ASan build, the ASan runtime loaded first, as
# the python suite has it); skips where the package is not built.
world_python() {
	[ -n "${WORLD_PY_PATH:-}" ] || skip "the world package is not built"
	python_asan_env
	PY=(env PYTHONPATH="$WORLD_PY_PATH" PYTHONDONTWRITEBYTECODE=1 "${PY_ASAN_ENV[@]}" "$PYTHON")
}

# python_asan_env: PY_ASAN_ENV, what the uninstrumented interpreter needs
# in the ASan build (tests/python/meson.build says why no leaks): the ASan
# runtime first, and libstdc++, as ASan finds C++'s real throw only in a
# library loaded before it starts (torch's come later). Colon-separated:
# some tests hand it to a remote shell, which splits words. Empty
# otherwise.
python_asan_env() {
	PY_ASAN_ENV=()
	if ldd "$WORLDRUN" | grep -q libasan; then
		PY_ASAN_ENV=(LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libstdc++.so.6)"
			ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1)
	fi
}

# output_is WANT COMMAND...: COMMAND prints WANT. For wait_until, which
# runs it anew each time ("test "$(...)" -eq N" would be judged once).
output_is() {
	local want=$1
	shift
	[ "$("$@")" = "$want" ]
}

# spawned SCRIPT: $DIR/prog.py, a script whose main(rank, port) runs in 3
# processes it starts itself, Machin's way, then prints what each returned.
spawned() {
	cat >"$DIR/prog.py"
	cat >>"$DIR/prog.py" <<'PY'
def _run(rank, port, q):
    q.put((rank, main(rank, port)))

if __name__ == "__main__":
    import socket, multiprocessing
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_run, args=(r, port, q)) for r in range(3)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(90)
    outs = {}
    while not q.empty():
        r, out = q.get()
        outs[r] = out
    for r in range(3):
        print(f"rank {r}: {outs.get(r, 'none')}", flush=True)
PY
}
