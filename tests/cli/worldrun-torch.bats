#!/usr/bin/env bats
# Programs written for torchrun run unchanged under worldrun: a gloo
# program (env:// rendezvous, all_reduce, barrier) with Debian's torch,
# alone and two jobs at once; torchrun's command line, its options and
# its environment. Across hosts: worldrun-sshd.bats.
load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	GLOO=$SRCDIR/tests/cli/gloo.py
}

@test "torch: a gloo program's env:// rendezvous, all_reduce and barrier work on 4 ranks" {
	needs_torch
	run -0 --separate-stderr worldrun -n 4 /usr/bin/python3 "$GLOO"
	assert_line '0 10 0 127.0.0.1'
	assert_line '1 10 1 127.0.0.1'
	assert_line '2 10 2 127.0.0.1'
	assert_line '3 10 3 127.0.0.1'
	assert_equal "${#lines[@]}" 4
}

@test "torch: two gloo jobs at once on one host each get a MASTER_PORT of their own" {
	needs_torch
	worldrun -n 3 /usr/bin/python3 "$GLOO" >"$BATS_TEST_TMPDIR/a" 2>&1 &
	a=$!
	worldrun -n 3 /usr/bin/python3 "$GLOO" >"$BATS_TEST_TMPDIR/b" 2>&1 &
	b=$!
	wait "$a"
	wait "$b"
	run -0 sort "$BATS_TEST_TMPDIR/a"
	assert_output $'0 6 0 127.0.0.1\n1 6 1 127.0.0.1\n2 6 2 127.0.0.1'
	run -0 sort "$BATS_TEST_TMPDIR/b"
	assert_output $'0 6 0 127.0.0.1\n1 6 1 127.0.0.1\n2 6 2 127.0.0.1'
}

# torchrun's command line: the script runs as torchrun runs it. These
# need no torch: PYTHON_EXEC names the Python, as torchrun reads it.
@test "torchrun: --nproc-per-node 4 train.py --epochs 1 runs PYTHON -u train.py --epochs 1 on 4 ranks" {
	printf 'import os, sys\nprint(os.environ["RANK"], sys.orig_argv[1:])\n' >"$D/train.py"
	cd "$D"
	PYTHON_EXEC=$(command -v python3) run -0 --separate-stderr worldrun --nproc-per-node 4 train.py --epochs 1
	assert_line "0 ['-u', 'train.py', '--epochs', '1']"
	assert_line "3 ['-u', 'train.py', '--epochs', '1']"
	assert_equal "${#lines[@]}" 4
}

@test "torchrun: the script runs in the Python of the torchrun on PATH, as torchrun's own" {
	# A Python of another name, which is what sys.executable then says.
	ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$D/mypython"
	printf '#!%s\n' "$D/mypython" >"$D/torchrun"
	chmod +x "$D/torchrun"
	printf 'import sys\nprint(sys.executable)\n' >"$D/train.py"
	cd "$D"
	PATH=$D:$PATH run -0 --separate-stderr worldrun --nproc_per_node 1 train.py
	assert_output "$D/mypython"
	printf '#!/bin/sh\n' >"$D/torchrun"
	PATH=$D:$PATH PYTHON_EXEC=/no/such/python run -127 worldrun --nproc_per_node 1 train.py
	assert_output 'worldrun: /no/such/python: program not found'
}

@test "torchrun: -m runs a module, --no-python the program itself, and not both" {
	PYTHON_EXEC=python3 run -0 --separate-stderr worldrun --nproc-per-node 2 -m json.tool --help
	assert_line --partial 'usage: python -m json.tool'
	printf '#!/bin/sh\necho "sh $WORLD_RANK $*"\n' >"$D/job.sh"
	chmod +x "$D/job.sh"
	run -0 --separate-stderr worldrun --nproc-per-node 2 --no-python "$D/job.sh" a
	assert_line 'sh 1 a'
	run -125 worldrun --nproc-per-node 2 --no_python -m json.tool
	assert_output 'worldrun: --no-python and -m: give one of them (see worldrun --help)'
}

@test "torchrun: a script named .py runs by Python, as under torchrun, even one that is not there" {
	cd "$D"
	PYTHON_EXEC=python3 run -2 --separate-stderr worldrun --nproc-per-node 1 missing.py
	grep -qF -- "python3: can't open file '$D/missing.py': [Errno 2] No such file or directory" <<<"$stderr"
}

@test "torchrun: a compiled program or another interpreter's script under torchrun's options runs as it is" {
	run -0 --separate-stderr worldrun --nproc-per-node 2 wr-env WORLD_SIZE
	assert_line 'WORLD_SIZE=2'
	printf '#!/bin/sh\necho "sh $WORLD_RANK"\n' >"$D/job"
	chmod +x "$D/job"
	run -0 --separate-stderr worldrun --nproc-per-node 2 "$D/job"
	assert_line 'sh 1'
	printf 'import os\nprint("py", os.environ["RANK"])\n' >"$D/job"
	PYTHON_EXEC=python3 run -0 --separate-stderr worldrun --nproc-per-node 2 "$D/job"
	assert_line 'py 1'
}

@test "torchrun: --role, --rdzv-id, --master-addr and --master-port set torchrun's names" {
	run -0 --separate-stderr worldrun --nproc-per-node 2 --role trainer --rdzv-id run7 \
		--master-addr 127.0.0.2 --master_port 29555 \
		wr-env ROLE_NAME TORCHELASTIC_RUN_ID MASTER_ADDR MASTER_PORT
	assert_line 'ROLE_NAME=trainer'
	assert_line 'TORCHELASTIC_RUN_ID=run7'
	assert_line 'MASTER_ADDR=127.0.0.2'
	assert_line 'MASTER_PORT=29555'
	run -125 worldrun --master-port 70000 wr-exit 0
	assert_output 'worldrun: --master-port 70000: not a TCP port (1 to 65535) (see worldrun --help)'
	run -125 worldrun --role $'a\nb' wr-exit 0
	assert_output 'worldrun: --role : expected a name without control characters (see worldrun --help)'
}

@test "torchrun: every rank gets torchrun's names, and -x cannot override them" {
	run -0 --separate-stderr worldrun -n 2 wr-env ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME GROUP_WORLD_SIZE \
		TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID \
		TORCHELASTIC_USE_AGENT_STORE TORCHELASTIC_ERROR_FILE WORLD_JOBID
	assert_line 'ROLE_RANK=1'
	assert_line 'ROLE_WORLD_SIZE=2'
	assert_line 'ROLE_NAME=default'
	assert_line 'GROUP_WORLD_SIZE=1'
	assert_line 'TORCHELASTIC_RESTART_COUNT=0'
	assert_line 'TORCHELASTIC_MAX_RESTARTS=0'
	assert_line 'TORCHELASTIC_USE_AGENT_STORE=False'
	jobid=$(grep -m1 '^WORLD_JOBID=' <<<"$output" | cut -d= -f2)
	assert_line "TORCHELASTIC_RUN_ID=$jobid"
	assert_line --regexp "^TORCHELASTIC_ERROR_FILE=/.*/worldrun-$jobid-[^/]*/error-1\\.json\$"
	run -125 worldrun -x TORCHELASTIC_RUN_ID=x wr-exit 0
	assert_output 'worldrun: -x TORCHELASTIC_RUN_ID: worldrun sets this variable in every rank'
	TORCHELASTIC_RESTART_COUNT=5 ROLE_NAME=x run -0 --separate-stderr worldrun wr-env TORCHELASTIC_RESTART_COUNT ROLE_NAME
	assert_output $'TORCHELASTIC_RESTART_COUNT=0\nROLE_NAME=default'
}

@test "torchrun: OMP_NUM_THREADS is 1 where ranks share a host, unless set, and said once" {
	run -0 --separate-stderr worldrun --nproc-per-node 3 wr-env OMP_NUM_THREADS
	assert_equal "$(grep -c '^OMP_NUM_THREADS=1$' <<<"$output")" 3
	assert_equal "$stderr" 'worldrun: OMP_NUM_THREADS=1 in ranks that share a host, as torchrun sets it; set OMP_NUM_THREADS to choose'
	run -0 --separate-stderr worldrun -n 3 wr-env OMP_NUM_THREADS
	assert_equal "$(grep -c '^OMP_NUM_THREADS=1$' <<<"$output")" 3
	assert_equal "$stderr" ''
	OMP_NUM_THREADS=2 run -0 --separate-stderr worldrun --nproc-per-node 3 wr-env OMP_NUM_THREADS
	assert_equal "$(grep -c '^OMP_NUM_THREADS=2$' <<<"$output")" 3
	assert_equal "$stderr" ''
	run -0 --separate-stderr worldrun -x OMP_NUM_THREADS=4 --nproc-per-node 2 wr-env OMP_NUM_THREADS
	assert_equal "$(grep -c '^OMP_NUM_THREADS=4$' <<<"$output")" 2
	run -0 --separate-stderr worldrun --nproc-per-node 1 wr-env OMP_NUM_THREADS
	assert_output 'OMP_NUM_THREADS unset'
}

@test "torchrun: its options that ask what worldrun does are accepted; the rest refused in one line" {
	local ok
	for ok in '--rdzv-backend c10d' '--rdzv_backend=static' '--rdzv-endpoint localhost:29400' \
		'--rdzv-conf join_timeout=5' '--start-method fork' '--event-log-handler null' \
		'--redirects 0' '-r 0' '--tee 0' '--monitor-interval 0.5' '--standalone'; do
		# shellcheck disable=SC2086
		run -0 worldrun --nproc-per-node 1 $ok wr-exit 0
	done
	run -125 worldrun --rdzv-backend etcd wr-exit 0
	assert_output "worldrun: --rdzv-backend etcd: worldrun is the job's rendezvous: drop it (static and c10d are accepted)"
	run -125 worldrun --tee 3 wr-exit 0
	assert_output 'worldrun: --tee 3: use --output-dir DIR (each rank'"'"'s output in DIR/RANK/stdout and DIR/RANK/stderr)'
	run -125 worldrun --local-ranks-filter 0 wr-exit 0
	assert_output "worldrun: --local-ranks-filter: not supported: every rank's output is shown (-l labels it, --output-dir DIR keeps each rank's apart)"
	run -125 worldrun --monitor-interval 0 wr-exit 0
	assert_output 'worldrun: --monitor-interval 0: not a number of seconds above 0 (see worldrun --help)'
}

# torch 1.13's torchrun crashes at start on Python 3.11 unless its
# workers' streams are redirected: --redirects 2 --tee 1 (stderr to a
# file and stdout teed, labelled "[default0]:") lets it run here.
@test "torchrun: a rank's torchrun names are torchrun's own, name by name (torchrun --standalone)" {
	needs_torch
	cat >"$D/names.py" <<-'PY'
	import os
	same = ("RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK ROLE_RANK ROLE_NAME "
	        "ROLE_WORLD_SIZE GROUP_WORLD_SIZE TORCHELASTIC_RESTART_COUNT "
	        "TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_USE_AGENT_STORE OMP_NUM_THREADS").split()
	made = "MASTER_ADDR MASTER_PORT TORCHELASTIC_RUN_ID TORCHELASTIC_ERROR_FILE".split()
	for n in same:
	    print(f"{os.environ['RANK']} {n}={os.environ.get(n)}")
	for n in made:
	    print(f"{os.environ['RANK']} {n} {'set' if os.environ.get(n) else 'unset'}")
	PY
	cd "$D"
	/usr/bin/torchrun --standalone --nproc_per_node 3 --redirects 2 --tee 1 names.py 2>/dev/null |
		sed -n 's/^\[default[0-9]*\]://p' | sort >"$D/torchrun.out"
	assert_equal "$(wc -l <"$D/torchrun.out")" 51
	run -0 --separate-stderr worldrun --standalone --nproc_per_node 3 names.py
	assert_equal "$(sort <<<"$output")" "$(cat "$D/torchrun.out")"
}

@test "torchrun: a gloo program runs with torchrun's command line as it is" {
	needs_torch
	run -0 --separate-stderr worldrun --nproc-per-node 4 "$GLOO"
	assert_line '0 10 0 127.0.0.1'
	assert_line '3 10 3 127.0.0.1'
	assert_equal "${#lines[@]}" 4
}

# The exception a rank dies of: its error file (TORCHELASTIC_ERROR_FILE),
# read by its host's agent, ends its failure line; --report holds it.
# raise.py writes the file as torch's @record does, then exits 3.
raise_py() {
	cat >"$D/raise.py" <<-'PY'
	import json, os, sys
	if os.environ["RANK"] == os.environ.get("BAD", "1"):
	    msg = sys.argv[1] if len(sys.argv) > 1 else "ValueError: bad input"
	    tb = "Traceback (most recent call last):\n" + "".join(
	        f"  frame {i}\n" for i in range(int(os.environ.get("FRAMES", "2")))) + "raised here\n"
	    with open(os.environ["TORCHELASTIC_ERROR_FILE"], "w") as f:
	        json.dump({"message": {"message": msg, "extraInfo": {"py_callstack": tb}}}, f)
	    sys.exit(3)
	import time
	time.sleep(60)
	PY
}

@test "exception: a rank's error file ends its failure line, and --report holds its traceback" {
	raise_py
	run -3 worldrun -n 2 --report "$D/r.json" python3 "$D/raise.py"
	assert_line --index 0 --regexp '^worldrun: rank 1 \(pid [0-9]+ on .*\) exited with status 3 after [0-9.]+ s: ValueError: bad input$'
	assert_line --index 1 'worldrun: stopped 1 other rank'
	assert_equal "${#lines[@]}" 2
	run -0 python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["ranks"]
print(r[1]["exception"]["message"]); print(r[1]["exception"]["traceback"].splitlines()[-1]); print(r[0]["exception"])' "$D/r.json"
	assert_output $'ValueError: bad input\nraised here\nNone'
}

@test "exception: a remote rank's error file reaches the failure line through its agent" {
	raise_py
	run -3 worldrun -H node-a:1,node-b:1 --rsh wr-rsh --report "$D/r.json" python3 "$D/raise.py"
	assert_line --index 0 --regexp '^worldrun: rank 1 \(pid [0-9]+ on node-b\) exited with status 3 after [0-9.]+ s: ValueError: bad input$'
	run -0 python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["ranks"]
print(r[1]["exception"]["traceback"].splitlines()[-1])' "$D/r.json"
	assert_output 'raised here'
}

@test "exception: control characters in the file stay out of the one line; 10,000 lines of traceback too" {
	raise_py
	run -3 worldrun -n 2 --report "$D/r.json" python3 "$D/raise.py" $'E: a\nb\x1b[31mc'
	assert_line --index 0 --regexp ' exited with status 3 after [0-9.]+ s: E: a\\nb\\x1b\[31mc$'
	assert_equal "${#lines[@]}" 2
	FRAMES=10000 run -3 worldrun -n 2 --report "$D/r.json" python3 "$D/raise.py"
	assert_equal "${#lines[@]}" 2
	run -0 python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["ranks"][1]["exception"]["traceback"]
print(len(t) <= 32768, t.splitlines()[-1])' "$D/r.json"
	assert_output 'True raised here'
}

@test "exception: a rank that writes no error file, or something else there, gets its line as before" {
	run -3 worldrun -n 2 sh -c '[ "$RANK" = 1 ] && exit 3; sleep 60'
	assert_line --index 0 --regexp '^worldrun: rank 1 \(pid [0-9]+ on .*\) exited with status 3 after [0-9.]+ s$'
	run -3 worldrun -n 2 sh -c '[ "$RANK" = 1 ] && mkfifo "$TORCHELASTIC_ERROR_FILE" && exit 3; sleep 60'
	assert_line --index 0 --regexp " exited with status 3 after [0-9.]+ s: \(its error file is not torchelastic's JSON\)$"
	run -3 worldrun -n 2 sh -c '[ "$RANK" = 1 ] && echo oops >"$TORCHELASTIC_ERROR_FILE" && exit 3; sleep 60'
	assert_line --index 0 --regexp " exited with status 3 after [0-9.]+ s: \(its error file is not torchelastic's JSON\)$"
	run -0 worldrun -n 2 --report "$D/r.json" sh -c 'echo "{\"message\": \"E: x\"}" >"$TORCHELASTIC_ERROR_FILE"'
	assert_output ''
	run -0 python3 -c 'import json, sys; print([k["exception"] for k in json.load(open(sys.argv[1]))["ranks"]])' "$D/r.json"
	assert_output '[None, None]'
}

@test "exception: an uncaught exception in a rank that imports world is written for it" {
	world_python
	printf 'import os, time, world\nif os.environ["RANK"] == "1":\n    raise KeyError("no such key")\ntime.sleep(60)\n' >"$D/bare.py"
	run -1 worldrun -n 2 --report "$D/r.json" "${PY[@]}" "$D/bare.py"
	assert_line --regexp "^worldrun: rank 1 \(pid [0-9]+ on .*\) exited with status 1 after [0-9.]+ s: KeyError: 'no such key'$"
	assert_line '    raise KeyError("no such key")'
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ranks"][1]["exception"]["traceback"].splitlines()[-2])' "$D/r.json"
	assert_output '    raise KeyError("no such key")'
	# With a World, the rank says it failed, and that line has it.
	printf 'import os, time, world\nw = world.World()\nif w.rank == 1:\n    raise KeyError("no such key")\nw.barrier()\n' >"$D/bare2.py"
	run -1 worldrun -n 2 "${PY[@]}" "$D/bare2.py"
	assert_line --regexp "^worldrun: rank 1 \(pid [0-9]+ on .*\) failed: uncaught KeyError: 'no such key'$"
	assert_line --regexp "^worldrun: rank 1 \(pid [0-9]+ on .*\) exited with status 1 after [0-9.]+ s$"
}

@test "exception: torch's @record, on a local and on a remote rank" {
	needs_torch
	cat >"$D/rec.py" <<-'PY'
	import os, time
	from torch.distributed.elastic.multiprocessing.errors import record
	@record
	def main():
	    if os.environ["RANK"] == "1":
	        raise ValueError("bad batch 7")
	    time.sleep(60)
	main()
	PY
	run -1 worldrun --nproc-per-node 2 "$D/rec.py"
	assert_line --regexp '^worldrun: rank 1 \(pid [0-9]+ on .*\) exited with status 1 after [0-9.]+ s: ValueError: bad batch 7$'
	run -1 worldrun -H node-a:1,node-b:1 --rsh wr-rsh --report "$D/r.json" /usr/bin/python3 "$D/rec.py"
	assert_line --regexp '^worldrun: rank 1 \(pid [0-9]+ on node-b\) exited with status 1 after [0-9.]+ s: ValueError: bad batch 7$'
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ranks"][1]["exception"]["traceback"].splitlines()[-1])' "$D/r.json"
	assert_output 'ValueError: bad batch 7'
}
