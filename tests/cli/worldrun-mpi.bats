#!/usr/bin/env bats
# MPICH programs run unchanged under worldrun: its agents serve them
# PMI-1 (PMI_FD). wr-mpi (tests/helpers) is built where MPICH is; under
# CI=true its absence fails. Across the sshd hosts: worldrun-sshd.bats.
load helpers

setup() {
	if [ ! -x "$HELPERS/wr-mpi" ]; then
		[ "${CI:-}" != true ] || fail "CI installs libmpich-dev: wr-mpi must be built"
		skip "wr-mpi is not built (needs MPICH: libmpich-dev)"
	fi
	# MPICH keeps what it allocates until exit; that is not worldrun's leak.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

# ring_ok N: $output is N ranks' ring lines, token and sum right.
ring_ok() {
	local n=$1
	assert_equal "$(grep -c "^rank [0-9]* of $n: ring [0-9]* sum $n " <<<"$output")" "$n"
	assert_line --regexp "^rank 0 of $n: ring $((n * (n - 1) / 2)) sum $n split 0 of $(((n + 1) / 2)) on 0$"
}

@test "mpi: an MPICH ring, all_reduce, barrier and split run on 1, 2, 4 and 8 ranks" {
	for n in 1 2 4 8; do
		run -0 --separate-stderr worldrun -n "$n" wr-mpi ring
		ring_ok "$n"
	done
}

@test "mpi: MPICH learns from PMI_process_mapping which ranks share a node, by slot and by node" {
	run -0 --separate-stderr worldrun -H localhost:2,node-b:2,node-c:2 --rsh wr-rsh wr-mpi ring
	ring_ok 6
	assert_line --regexp '^rank 3 of 6: .* on 2$'
	assert_line --regexp '^rank 5 of 6: .* on 4$'
	run -0 --separate-stderr worldrun -H localhost:2,node-b:2,node-c:2 --map-by node --rsh wr-rsh \
		wr-mpi ring
	ring_ok 6
	assert_line --regexp '^rank 3 of 6: .* on 0$'
	assert_line --regexp '^rank 5 of 6: .* on 2$'
}

@test "mpi: MPI_Abort with 17 ends the job with 17 and a line naming the rank, --keep-going or not" {
	run -17 --separate-stderr worldrun --timeout 60 -n 4 wr-mpi abort 17
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) called abort with exit code 17"
	assert_regex "$stderr" "worldrun: stopped 3 other ranks"
	run -17 --separate-stderr worldrun --timeout 60 -n 4 --keep-going wr-mpi abort 17
	run -17 --separate-stderr worldrun --timeout 60 -H localhost:2,node-b:2 --rsh wr-rsh wr-mpi abort 17
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on localhost\\) called abort with exit code 17"
}

@test "mpi: MPI_Abort with 0 or 256 is no success: status 1, and the line says so" {
	abort_codes_ok wr-mpi
}

@test "mpi: a rank killed mid-job stops the others" {
	run -137 --separate-stderr worldrun --timeout 60 -n 4 wr-mpi die
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) killed by signal 9 \\(SIGKILL\\)"
	assert_regex "$stderr" "worldrun: stopped 3 other ranks"
}

@test "mpi: a rank that exits 0 without MPI_Finalize fails the job" {
	run -1 --separate-stderr worldrun --timeout 60 -n 3 wr-mpi exit
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) left PMI without finalize, then exited with status 0"
}

@test "mpi: two MPICH jobs at once on one host keep apart" {
	worldrun -n 4 wr-mpi ring >"$BATS_TEST_TMPDIR/a" 2>&1 &
	a=$!
	worldrun -n 3 wr-mpi ring >"$BATS_TEST_TMPDIR/b" 2>&1 &
	b=$!
	wait "$a"
	wait "$b"
	run -0 cat "$BATS_TEST_TMPDIR/a"
	ring_ok 4
	run -0 cat "$BATS_TEST_TMPDIR/b"
	ring_ok 3
}

@test "mpi: -x cannot set the PMI variables worldrun serves" {
	for name in PMI_FD PMI_RANK PMI_SIZE PMI_PORT PMI_ID MPI_LOCALRANKID MPI_LOCALNRANKS; do
		run -125 --separate-stderr worldrun -n 1 -x "$name=5" true
		assert_equal "$stderr" "worldrun: -x $name: worldrun sets this variable in every rank"
	done
}

@test "mpi: ranks get MPI_LOCALRANKID and MPI_LOCALNRANKS as under mpiexec.hydra, and never inherited ones" {
	run -0 --separate-stderr env MPI_LOCALRANKID=9 MPI_LOCALNRANKS=9 \
		worldrun -H localhost:3,node-b:2 --rsh wr-rsh -l sh -c \
		'echo "$MPI_LOCALRANKID/$MPI_LOCALNRANKS $WORLD_LOCAL_RANK/$WORLD_LOCAL_SIZE"'
	assert_line '0: 0/3 0/3'
	assert_line '2: 2/3 2/3'
	assert_line '3: 0/2 0/2'
	assert_line '4: 1/2 1/2'
	run -0 --separate-stderr env MPI_LOCALRANKID=9 worldrun -n 2 --pmi port sh -c 'echo "[$MPI_LOCALRANKID]"'
	assert_line '[0]'
	assert_line '[1]'
	run -0 --separate-stderr env MPI_LOCALRANKID=9 worldrun -n 1 --pmi none sh -c 'echo "[${MPI_LOCALRANKID-unset}]"'
	assert_output '[unset]'
}

@test "mpi: a worldrun inside an mpiexec rank starts a job of its own" {
	command -v mpiexec.hydra >/dev/null || skip "needs mpiexec.hydra (mpich)"
	run -0 --separate-stderr timeout 60 mpiexec.hydra -n 1 "$WORLDRUN" -n 2 wr-mpi ring
	ring_ok 2
}

@test "mpi: an MPICH program without PMI-1 runs alone, and worldrun says so once; one with it is not warned" {
	run -0 --separate-stderr worldrun -n 2 --pmi pmix wr-mpi init
	assert_regex "$stderr" "^worldrun: rank [01] linked libmpich\.so\.[0-9]+ but spoke to no PMI server: it most likely ran as a job of one rank \(see --pmi\)$"
	run -0 --separate-stderr worldrun -n 2 wr-mpi init
	assert_equal "$stderr" ""
	run -0 --separate-stderr worldrun -n 2 --pmi none wr-mpi init
	assert_equal "$stderr" ""
}

@test "mpi: a rank that is not MPI never troubles PMI, and programs that are not MPI exit 0" {
	run -0 --separate-stderr worldrun -n 3 sh -c 'exit 0'
	assert_equal "$stderr" ""
}

@test "mpi: garbage on a rank's PMI connection closes it with a line; the job fails, worldrun stands" {
	run -137 --separate-stderr worldrun -n 2 --kill-grace 0.2 sh -c \
		'[ "$WORLD_RANK" = 1 ] || exit 0; printf "cmd=init pmi_version=1\n\001\002 junk\n" >&3; exec sleep 30'
	assert_regex "$stderr" "worldrun: rank 1: a line that is not a PMI-1 request"
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) was lost: it left PMI without finalize; killed"
}

# pmi_talk LINES...: a rank that sends LINES on its PMI connection (one
# at a time, each answer read before the next, none for abort) and
# prints each answer; then finalizes.
pmi_talk() {
	python3 -c '
import os, socket, sys
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rwb", buffering=0)
for line in sys.argv[1:] + ["cmd=finalize"]:
    line = line.replace("JOB", os.environ["WORLD_JOBID"])
    f.write(line.encode() + b"\n")
    print(f.readline().decode().rstrip("\n"), flush=True)' "$@"
}

@test "mpi: PMI answers every request of the catalogue, unknown ones and missing keys included" {
	export -f pmi_talk
	run -0 --separate-stderr worldrun -n 1 bash -c 'pmi_talk "$@"' _ \
		'cmd=get kvsname=kvs_JOB key=early' \
		'cmd=init pmi_version=1 pmi_subversion=1' 'cmd=get_maxes' 'cmd=get_appnum' \
		'cmd=get_universe_size' 'cmd=get_my_kvsname' \
		'cmd=put kvsname=kvs_JOB key=k value=a\ b' 'cmd=get kvsname=kvs_JOB key=k' \
		'cmd=get kvsname=kvs_JOB key=PMI_process_mapping' 'cmd=put kvsname=other key=k value=v' \
		'cmd=lookup_name service=s' 'cmd=frobnicate' 'cmd=barrier_in'
	assert_line --index 0 'cmd=get_result rc=-1 msg=key_early_not_found value=unknown found=FALSE'
	assert_line --index 1 'cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0'
	assert_line --index 2 'cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024'
	assert_line --index 3 'cmd=appnum rc=0 appnum=0'
	assert_line --index 4 'cmd=universe_size rc=0 size=1'
	assert_line --index 5 --regexp '^cmd=my_kvsname rc=0 kvsname=kvs_[0-9a-f]{12}$'
	assert_line --index 6 'cmd=put_result rc=0 msg=success'
	assert_line --index 7 'cmd=get_result rc=0 msg=success value=a\ b found=TRUE'
	assert_line --index 8 'cmd=get_result rc=0 msg=success value=(vector,(0,1,1)) found=TRUE'
	assert_line --index 9 'cmd=put_result rc=-1 msg=unknown_kvsname'
	assert_line --index 10 'cmd=lookup_result rc=-1 msg=the_service_name_is_not_published info=fail'
	assert_line --index 11 'cmd=frobnicate_result rc=-1 msg=not_supported_by_worldrun'
	assert_line --index 12 'cmd=barrier_out rc=0 msg=success'
	assert_line --index 13 'cmd=finalize_ack rc=0'
}

@test "mpi: MPI_Publish_name and MPI_Lookup_name work as under mpiexec.hydra" {
	run -0 --separate-stderr worldrun -n 3 wr-mpi publish
	assert_line 'rank 0: published'
	assert_line 'rank 1: looked up the port rank 0 published'
	assert_line 'rank 0: unpublished'
	assert_line 'rank 1: no port any more'
	assert_equal "$stderr" ''
}

@test "mpi: PMI's name service publishes a name once, looks it up, and unpublishes it once" {
	export -f pmi_talk
	run -0 --separate-stderr worldrun -n 1 bash -c 'pmi_talk "$@"' _ \
		'cmd=init pmi_version=1 pmi_subversion=1' \
		'cmd=publish_name service=svc port=p1' 'cmd=publish_name service=svc port=p2' \
		'cmd=lookup_name service=svc' 'cmd=unpublish_name service=svc' \
		'cmd=unpublish_name service=svc' 'cmd=lookup_name service=svc' \
		'cmd=publish_name service=svc' 'cmd=lookup_name' \
		'cmd=publish_name service=svc port=p2' 'cmd=lookup_name service=svc'
	assert_line --index 1 'cmd=publish_result rc=0 msg=success info=ok'
	assert_line --index 2 'cmd=publish_result rc=-1 msg=the_service_name_is_published_already info=fail'
	assert_line --index 3 'cmd=lookup_result rc=0 msg=success info=ok port=p1'
	assert_line --index 4 'cmd=unpublish_result rc=0 msg=success info=ok'
	assert_line --index 5 'cmd=unpublish_result rc=-1 msg=the_service_name_is_not_published info=fail'
	assert_line --index 6 'cmd=lookup_result rc=-1 msg=the_service_name_is_not_published info=fail'
	assert_line --index 7 'cmd=publish_result rc=-1 msg=a_service_and_its_port_are_needed info=fail'
	assert_line --index 8 'cmd=lookup_result rc=-1 msg=a_service_is_needed info=fail'
	assert_line --index 9 'cmd=publish_result rc=0 msg=success info=ok'
	assert_line --index 10 'cmd=lookup_result rc=0 msg=success info=ok port=p2'
}

@test "mpi: PMI takes keys of 64 bytes and values of 1024, refuses one byte more, and never serves a value it cannot carry" {
	export -f pmi_talk
	k64=$(printf 'k%.0s' $(seq 64))
	v1024=$(printf 'v%.0s' $(seq 1024))
	# A value with a newline, set by another client (worldctl, libworld):
	# served raw, it would end the answer and forge the next line.
	run -0 --separate-stderr worldrun -n 1 bash -c \
		'worldctl kv set "pmi/$WORLD_JOBID/nl" "$(printf "a\ncmd=barrier_out rc=0")" && pmi_talk "$@"' _ \
		'cmd=init pmi_version=1 pmi_subversion=1' \
		"cmd=put kvsname=kvs_JOB key=$k64 value=$v1024" "cmd=get kvsname=kvs_JOB key=$k64" \
		"cmd=put kvsname=kvs_JOB key=${k64}k value=v" "cmd=put kvsname=kvs_JOB key=k value=${v1024}v" \
		"cmd=get kvsname=kvs_JOB key=${k64}k" 'cmd=get kvsname=kvs_JOB key=nl'
	assert_line --index 1 'cmd=put_result rc=0 msg=success'
	assert_line --index 2 "cmd=get_result rc=0 msg=success value=$v1024 found=TRUE"
	assert_line --index 3 'cmd=put_result rc=-1 msg=key_or_value_too_long_(see_get_maxes)'
	assert_line --index 4 'cmd=put_result rc=-1 msg=key_or_value_too_long_(see_get_maxes)'
	assert_line --index 5 'cmd=get_result rc=-1 msg=key_or_value_too_long_(see_get_maxes)'
	assert_line --index 6 'cmd=get_result rc=-1 msg=the_value_holds_a_byte_pmi_cannot_carry'
	assert_line --index 7 'cmd=finalize_ack rc=0'
}

@test "mpi: a PMI line past the maxima closes that connection, and the job says why" {
	run -137 --separate-stderr worldrun -n 2 --kill-grace 0.2 sh -c \
		'[ "$WORLD_RANK" = 1 ] || exit 0
		 { echo "cmd=init pmi_version=1"; head -c 10000 /dev/zero | tr "\0" x; } >&3; exec sleep 30'
	assert_regex "$stderr" "worldrun: rank 1: a PMI line longer than the maxima allow"
}

@test "mpi: MPICH's MPI_Comm_spawn fails under worldrun as under Hydra, before it asks for PMI-1's spawn" {
	# Debian's MPICH (ch4:ucx) cannot open the port a spawn needs.
	run -0 --separate-stderr mpiexec.hydra -n 2 wr-mpi spawn 1
	local hydra=$output
	run -0 --separate-stderr worldrun -n 2 wr-mpi spawn 1
	assert_equal "$(sort <<<"$output")" "$(sort <<<"$hydra")"
	assert_line "rank 0: spawn failed: 15"
}

@test "mpi: a multi-line spawn is read to its endcmd and refused" {
	export -f pmi_talk
	run -0 --separate-stderr worldrun -n 1 python3 -c '
import os, socket
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rwb", buffering=0)
f.write(b"cmd=init pmi_version=1 pmi_subversion=1\n")
print(f.readline().decode().strip())
f.write(b"mcmd=spawn\nnprocs=2\nexecname=/bin/true\nendcmd\ncmd=finalize\n")
print(f.readline().decode().strip())
print(f.readline().decode().strip())'
	assert_line --index 1 'cmd=spawn_result rc=-1 errmsg=spawn_is_not_supported_by_worldrun'
	assert_line --index 2 'cmd=finalize_ack rc=0'
}

@test "mpi: the hang report names the ranks in a PMI barrier and the one they wait for" {
	# 8 s: three Pythons start on 2 busy cores and reach the barrier first.
	run -124 --separate-stderr worldrun -n 3 --timeout 8 --kill-grace 0.3 python3 -c '
import os, socket, time
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rwb", buffering=0)
f.write(b"cmd=init pmi_version=1 pmi_subversion=1\n"); f.readline()
if os.environ["WORLD_RANK"] != "1":
    f.write(b"cmd=barrier_in\n"); f.readline()
time.sleep(30)'
	assert_regex "$stderr" "worldrun:   ranks 0,2 in PMI barrier \\(MPI_Init, MPI_Finalize or MPI_Barrier\\) \\(since [0-9.]+ s\\), waiting for rank 1"
}

# port_talk ID: connect to PMI_PORT, send an initack for ID, print the
# answers until the server closes or 2 s pass.
PORT_TALK='
import os, socket, sys
host, port = os.environ["PMI_PORT"].split(":")
s = socket.create_connection((host, int(port)), timeout=5)
try:
    s.sendall(b"cmd=initack pmiid=%s\n" % sys.argv[1].encode())
except OSError:
    pass
s.settimeout(2)
out = b""
try:
    while b"debug" not in out:
        b = s.recv(4096)
        if not b:
            break
        out += b
except OSError:
    pass
print(out.decode().replace("\n", "|") or "closed")'

@test "mpi: --pmi port serves MPICH on a loopback port (PMI_PORT, PMI_ID), with fds 0-2 only" {
	run -0 --separate-stderr worldrun -n 4 --pmi port wr-mpi ring
	ring_ok 4
	run -0 --separate-stderr worldrun -H localhost:2,node-b:2 --rsh wr-rsh --pmi port wr-mpi ring
	ring_ok 4
	run -0 --separate-stderr worldrun -n 1 --pmi port sh -c 'env | grep "^PMI_" | sort; exec wr-probe'
	assert_line --regexp '^PMI_PORT=127\.0\.0\.1:[0-9]+$'
	assert_line 'PMI_ID=0'
	assert_line 'fds=0,1,2'
	refute_line --partial 'PMI_FD'
}

@test "mpi: on the PMI port each rank's id is taken once, and no other id at all" {
	run -0 --separate-stderr worldrun -n 2 --pmi port sh -c \
		'[ "$WORLD_RANK" = 0 ] || exec sleep 5
		 python3 -c "$0" 1; python3 -c "$0" 1; python3 -c "$0" 7' "$PORT_TALK"
	assert_line --index 0 'cmd=initack|cmd=set size=2|cmd=set rank=1|cmd=set debug=0|'
	assert_line --index 1 'closed'
	assert_line --index 2 'closed'
}

@test "mpi: the PMI port refuses another user's connection before reading it" {
	[ "$(id -u)" = 0 ] || skip "needs root (to connect as another user)"
	command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
	run -0 --separate-stderr worldrun -n 1 --pmi port sh -c \
		'setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$0" 0
		 python3 -c "$0" 0' "$PORT_TALK"
	assert_line --index 0 'closed'
	assert_line --index 1 'cmd=initack|cmd=set size=1|cmd=set rank=0|cmd=set debug=0|'
}
