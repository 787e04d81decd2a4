#!/usr/bin/env bats
# Every shell example of README.md and of the man pages' EXAMPLES, taken
# from the files themselves and run as a newcomer would after README's
# first command: from a copy of the source directory's layout with the
# build in build/, with a plain PATH plus what README's own commands add.
# An example that needs what only its reader has (./app; worldrun(1)'s
# train.py runs in a test of its own, from the page's listing) or
# what this test cannot do (install packages) is a skip that says so.
load helpers

: "${SRCDIR:?run these tests through meson test}"
BUILDDIR="$(cd "$(dirname "$WORLDRUN")/../.." && pwd)"

# examples: one example command a record (NUL-terminated): "FILE: COMMAND".
# README's are its indented blocks, the pages' the fenced blocks of
# EXAMPLES; a command goes on while a line ends in "\" or a quote is open.
# Only blocks that start with a command are taken (not C, not output).
examples() {
	python3 - "$SRCDIR" <<'PY'
import re, sys, os
src = sys.argv[1]
first = re.compile(r"^(worldrun|worldctl|seq|jq|python3|tail|cc|for|meson|export) |^(\./|build/)\S")
def blocks_readme(text):
    block, prev = [], ""
    for line in text.split("\n") + [""]:
        if re.match(r"^ {4,}\S", line) and (block or prev.strip() == ""):
            block.append(line)
        elif block and line.strip() == "":
            yield block; block = []
        elif block:
            yield block; block = []
        prev = line
def blocks_man(text):
    m = re.search(r"^# EXAMPLES\n(.*?)(^# |\Z)", text, re.S | re.M)
    for b in re.findall(r"^```\n(.*?)^```", m.group(1) if m else "", re.S | re.M):
        yield [l.replace("\\\\", "\\") for l in b.rstrip("\n").split("\n")]
def units(block):
    ind = len(block[0]) - len(block[0].lstrip())
    lines = [l[ind:] for l in block]
    if not first.match(lines[0]):
        return
    cur = []
    for l in lines:
        cur.append(l)
        text = "\n".join(cur)
        if not l.endswith("\\") and text.count("'") % 2 == 0:
            yield text; cur = []
files = [("README.md", blocks_readme)] + [
    ("man/" + f, blocks_man) for f in sorted(os.listdir(src + "/man")) if f.endswith(".scd")]
for name, blocks in files:
    for b in blocks(open(src + "/" + name).read()):
        for u in units(b):
            sys.stdout.write(name + ": " + u + "\0")
PY
}

# why_skip COMMAND: why COMMAND cannot run here, or nothing.
why_skip() {
	local word

	for word in ./app ./sim ./solver ./test-shard ./prepare ./task ./step \
		train.py app.c weights.bin job.json logs/ /srv/run; do
		if [[ $1 == *"$word"* ]]; then
			echo "needs $word, the reader's own"
			return
		fi
	done
	case $1 in
	*setup.sh*) echo "installs packages" ;;
	*check.sh*) echo "runs every suite, this one included" ;;
	*"--suite long"*) echo "the long suite takes many minutes" ;;
	worldctl*) echo "a rank's command, for inside a job" ;;
	esac
}

setup() {
	if ! command -v python3 >/dev/null; then
		skip "python3 is not installed"
	fi
	# The source directory's layout, with this build as build/.
	W=$BATS_TEST_TMPDIR/src
	mkdir "$W"
	ln -s "$SRCDIR/share" "$SRCDIR/man" "$SRCDIR/README.md" "$W/"
	ln -s "$BUILDDIR" "$W/build"
}

@test "examples: README and the man pages hold the examples this test runs" {
	local n

	n=$(examples | tr '\0' '\n' | grep -c '^\(README.md\|man/[a-z.0-9]*\): ')
	assert [ "$n" -ge 10 ]
}

@test "examples: every README and man page example works as written after README's first command" {
	local ex file cmd why prelude=: ran=0 skipped= python_env=()

	python_asan_env
	python_env=("${PY_ASAN_ENV[@]}")

	while IFS= read -r -d '' ex; do
		file=${ex%%: *}
		cmd=${ex#*: }
		# README's first command sets up and builds: the build is here.
		cmd=${cmd#./share/setup.sh && meson setup build && ninja -C build && }
		if [[ $cmd == export\ PATH=* ]]; then
			prelude+="; $cmd"
			continue
		fi
		why=$(why_skip "$cmd")
		if [ -n "$why" ]; then
			skipped+="$file: ${cmd%%$'\n'*}: $why"$'\n'
			continue
		fi
		run env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin "${python_env[@]}" \
			bash -c "cd \"\$1\" && $prelude
				timeout 120 bash -c \"\$2\" </dev/null" _ "$W" "$cmd"
		if [ "$status" != 0 ]; then
			echo "$file: this example failed with $status:" >&2
			echo "$cmd" >&2
			echo "$output" | head -20 >&2
		fi
		assert_success
		ran=$((ran + 1))
	done < <(examples)
	echo "# skipped:"$'\n'"$skipped" | sed 's/^/# /' >&3
	assert [ "$ran" -ge 5 ]
	# "From another terminal, worldctl status": README's PATH has it too.
	run -0 env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin \
		bash -c "cd \"\$1\" && $prelude && command -v worldctl" _ "$W"
	assert_output "$W/build/cmd/worldctl/worldctl"
}

@test "examples: worldrun(1)'s torchrun example runs as written, with the train.py the page gives" {
	local cmd prelude
	/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
		skip "needs Debian's python3-torch"
	# The fenced block that runs train.py, and the one after "where
	# _train.py_", the program itself.
	cmd=$(examples | tr '\0' '\n' | sed -n '/^man\/worldrun.1.scd: worldrun -n 4 .*CUDA_VISIBLE_DEVICES/,/train.py/p' |
		sed 's/^man\/worldrun.1.scd: //')
	assert_regex "$cmd" 'python3 train.py --epochs 3$'
	python3 - "$SRCDIR/man/worldrun.1.scd" "$W/train.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^where _train.py_[^\n]*\n\n```\n(.*?)^```", text, re.S | re.M)
open(sys.argv[2], "w").write(m.group(1))
PY
	# README's PATH, as a newcomer has it.
	prelude=$(examples | tr '\0' '\n' | sed -n 's/^README.md: \(export PATH=.*\)/\1/p')
	assert_regex "$prelude" '^export PATH='
	run -0 env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin \
		bash -c "cd \"\$1\" && $prelude && timeout 120 bash -c \"\$2\" </dev/null" _ "$W" "$cmd"
	assert_line 'rank 0 of 4 (local 0) ready'
	assert_line 'rank 3 of 4 (local 3) ready'
	assert_equal "$(grep -c ' ready$' <<<"$output")" 4
}

@test "check: the test command's count shows a failed case's diagnostics, cut to their ends" {
	local log="$BATS_TEST_TMPDIR/testlog.json"
	python3 - "$log" <<'PY'
import json, sys
diag = "".join(f"# line {i}\n" for i in range(60))
out = "1..3\nok 1 first\nnot ok 2 second\n" + diag + "ok 3 third\n"
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"name": "t", "result": "FAIL", "stdout": out}) + "\n")
PY
	CI= run -1 python3 "$SRCDIR/share/count-tests.py" "$log"
	assert_line --index 0 "failed: t: 2 second"
	assert_line --index 1 "    # line 0"
	assert_line "    # line 9"
	refute_line "    # line 10"
	assert_line "    # ... 20 lines left out"
	refute_line "    # line 29"
	assert_line "    # line 30"
	assert_line --index -2 "    # line 59"
	assert_line --index -1 "2 passed, 1 failed"
}

@test "examples: meson devenv of the build tree compiles with pkg-config world, runs under worldrun, has worldctl and import world" {
	python_asan_env
	cat >"$BATS_TEST_TMPDIR/app.c" <<'C'
#include <stdio.h>
#include <world.h>

int
main(void)
{
	struct world *w;

	if (world_open(&w) < 0) {
		return 1;
	}
	printf("rank %d of %d\n", world_rank(w), world_size(w));
	return world_stop(w, 10000) < 0;
}
C
	# A newcomer's own shell: a plain PATH, nothing of the build in it.
	run -0 env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin "${PY_ASAN_ENV[@]}" \
		meson devenv -C "$BUILDDIR" bash -c 'cd "$1" &&
			cc -o app app.c $(pkg-config --cflags --libs world) &&
			worldrun -n 2 ./app && command -v worldctl &&
			/usr/bin/python3 -c "import world; print(world.__file__)"' _ "$BATS_TEST_TMPDIR"
	assert_line 'rank 0 of 2'
	assert_line 'rank 1 of 2'
	assert_line "$BUILDDIR/cmd/worldctl/worldctl"
	assert_line "$BUILDDIR/runtime/python/world/__init__.py"
}

@test "examples: a program built against the build tree, run outside its devenv: worldrun names the library the loader could not find" {
	printf '#include <world.h>\nint main(void) { struct world *w; return world_open(&w) < 0; }\n' \
		>"$BATS_TEST_TMPDIR/app.c"
	run -0 env PKG_CONFIG_PATH="$BUILDDIR/meson-uninstalled" sh -c \
		'cc -o "$1/app" "$1/app.c" $(pkg-config --cflags --libs world)' _ "$BATS_TEST_TMPDIR"
	run -127 --separate-stderr env -u LD_LIBRARY_PATH "$WORLDRUN" -n 1 "$BATS_TEST_TMPDIR/app"
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on [^)]+\) exited with status 127 after [0-9.]+ s: the dynamic loader could not find libworld\.so\.0 \(LD_LIBRARY_PATH; from a build tree, meson devenv\)'
}
