#!/usr/bin/env bats
# libworld's documentation against libworld itself: the man page covers
# every function, constant and error code of world.h with its exact
# prototype, it renders, the example programs run as the jobs they
# describe, world.pc lets a program build against an installed
# libworld, and the installed Python package imports and documents itself.
load helpers

: "${SRCDIR:?run these tests through meson test}"
MAN="$SRCDIR/man/libworld.3.scd"
# world.h and the header of codes and timeouts it includes: one API.
HEADERS=("$SRCDIR/runtime/world.h" "$SRCDIR/runtime/include/world_errors.h")
BUILDDIR="$(dirname "$WORLDRUN")/../.."
EXAMPLES="$BUILDDIR/share/examples"

# man_section NAME: the lines of the man page's section "# NAME".
man_section() {
	awk -v h="# $1" '$0 == h { on = 1; next } on && /^# / { exit } on' "$MAN"
}

# table_keys NAME: the first column of the tables in section NAME.
table_keys() {
	man_section "$1" | sed -n 's/^[|[][[ ] *\**\([^*]*\)\**$/\1/p'
}

# declarations FILE: every C declaration of FILE that names a world_*
# function, one a line, comments and preprocessor lines removed and white
# space squeezed, so that line breaks do not matter.
declarations() {
	perl -0777 -pe 's{/\*.*?\*/}{}gs' "$1" | grep -v '^#' | grep -v 'extern "C"' |
		tr -s ' \t\n' ' ' | tr ';' '\n' | sed -E 's/^[ {}]*//; s/ *$//' |
		grep -E '\bworld_[a-z_]+ ?\(' | sort -u
}

# header_functions: the name of every function (and function type)
# world.h declares.
header_functions() {
	declarations <(cat "${HEADERS[@]}") | grep -oE '\bworld_[a-z_]+ ?\(' | tr -d ' (' | sort -u
}

# man_functions: every world_* name that heads an entry of the page
# ("*world_rank*(_w_), *world_size*(_w_)" heads two).
man_functions() {
	grep -E '^\*world_' "$MAN" | grep -oE '\*world_[a-z_]+\*\(' | tr -d '*(' | sort -u
}

# man_code: the text of the page's code blocks.
man_code() {
	awk '/^```/ { on = !on; next } on' "$MAN"
}

# example NAME N: run example NAME as N ranks, with a time limit.
example() {
	worldrun -n "$2" --timeout 120 "$EXAMPLES/$1"
}

# build_option NAME: the value of meson option NAME in the build dir.
build_option() {
	meson introspect --buildoptions "$BUILDDIR" | python3 -c '
import json, sys
print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}

@test "world.h: declares the functions these tests compare against" {
	run -0 header_functions
	assert_line world_open
	assert_line world_kv_get
	assert_line world_call
	assert_line world_future_free
	assert_line world_handler_fn
	assert [ "${#lines[@]}" -ge 50 ]
}

@test "libworld(3): documents every function of world.h in an entry of its own" {
	local missing

	missing=$(comm -23 <(header_functions) <(man_functions) | tr '\n' ' ')
	assert_equal "${missing:-none}" none
}

@test "libworld(3): documents no function that world.h does not declare" {
	local stale

	stale=$(comm -13 <(header_functions) <(man_functions) | tr '\n' ' ')
	assert_equal "${stale:-none}" none
}

@test "libworld(3): shows every declaration of world.h word for word" {
	local decl missing= page

	page=$(declarations <(man_code))
	while IFS= read -r decl; do
		if ! grep -qxF -- "$decl" <<<"$page"; then
			missing+="$decl; "
		fi
	done < <(declarations <(cat "${HEADERS[@]}"))
	assert_equal "${missing:-none}" none
}

@test "libworld(3): ERRORS names every WORLD_E* code of world.h, and no other" {
	local header_codes man_codes

	header_codes=$(grep -hoE '\bWORLD_E[A-Z]+ = -[0-9]+' "${HEADERS[@]}" | cut -d' ' -f1 | sort)
	assert [ "$(echo "$header_codes" | wc -l)" -ge 8 ]
	man_codes=$(table_keys ERRORS | grep '^WORLD_E' | sort)
	assert_equal "$man_codes" "$header_codes"
	# The page's copy of the enum has the header's values.
	assert_equal "$(man_section ERRORS | grep -oE 'WORLD_E[A-Z]+ = -[0-9]+' | sort)" \
		"$(grep -hoE 'WORLD_E[A-Z]+ = -[0-9]+' "${HEADERS[@]}" | sort)"
}

@test "libworld(3): ERRORS lists the errno values libworld answers with" {
	local code

	run -0 table_keys ERRORS
	for code in -EINVAL -ENOENT -EEXIST -EPERM -ETIMEDOUT -ENOTSUP -ESHUTDOWN; do
		assert_line -- "$code"
	done
	run -0 man_section ERRORS
	assert_output --partial '*world_strerror*('
	assert_output --partial '*world_err_name*('
	assert_output --partial '*world_last_failure*('
}

@test "libworld(3): documents every constant world.h defines" {
	local name names missing=

	# Those with a value: the include guard is no constant.
	names=$(sed -nE 's/^#define (WORLD_[A-Z_]+)[[:space:]]+[^[:space:]].*/\1/p' "${HEADERS[@]}")
	assert [ "$(echo "$names" | wc -l)" -ge 3 ]
	for name in $names; do
		grep -qF -- "*$name*" "$MAN" || missing+=" $name"
	done
	assert_equal "${missing:-none}" none
	run -0 man_section TIMEOUTS
	assert_output --partial 'WORLD_TIMEOUT_DEFAULT* (-1)'
	assert_output --partial 'WORLD_TIMEOUT_FOREVER* (-2)'
}

@test "libworld(3): has the sections of a complete page" {
	local s

	for s in NAME SYNOPSIS DESCRIPTION ERRORS TIMEOUTS THREADS OWNERSHIP WORLD \
		KEY/VALUE 'RPC GROUPS' VALUES SERVICES 'DIRECT HANDLERS' \
		'REMOTE RESULTS' FUTURES 'COLLECTIVE GROUPS' ENVIRONMENT EXAMPLES 'SEE ALSO'; do
		run -0 grep -cx "# $s" "$MAN"
		assert_output 1
	done
	run -0 man_section SYNOPSIS
	assert_output --partial '#include <world.h>'
	assert_output --partial 'pkg-config --cflags --libs world'
	run -0 man_section 'SEE ALSO'
	assert_output --partial '*worldrun*(1)'
	assert_output --partial '*worldctl*(1)'
}

@test "libworld(3): ENVIRONMENT lists every variable libworld reads" {
	local name read_here

	# rundir.c is worldrun's and worldctl's: libworld does not link it.
	read_here=$(grep -ohE 'getenv\("[A-Z_]+"' $(ls "$SRCDIR"/runtime/*.c "$SRCDIR"/runtime/core/*.c "$SRCDIR"/runtime/coll/*.c |
		grep -v '/rundir\.c$') | cut -d'"' -f2 | sort -u)
	assert [ -n "$read_here" ]
	run -0 table_keys ENVIRONMENT
	for name in $read_here WORLD_RANK WORLD_SIZE WORLD_REGISTRY WORLD_SECRET \
		WORLD_LEASE_INTERVAL WORLD_WAIT_TIMEOUT WORLD_JOBID; do
		assert_line "$name"
	done
}

@test "libworld(3): scdoc renders it without error" {
	if ! command -v scdoc >/dev/null; then
		skip "scdoc is not installed"
	fi
	run -0 --separate-stderr scdoc <"$MAN"
	assert_line --index 0 --partial 'Generated by scdoc'
	assert_line --regexp '^\.TH "libworld" "3"'
	assert_line '.SH ERRORS'
	assert_line '.SH RPC GROUPS'
	assert_equal "$stderr" ""
}

@test "example kv: 4 ranks exchange values, add, elect a leader and meet at barriers" {
	local r l leaders

	run -0 --separate-stderr example kv 4
	for r in 0 1 2 3; do
		l=$(((r + 3) % 4))
		assert_line "rank $r: rank $l's square is $((l * l))"
		assert_line --regexp "^rank $r: leader [0-3], total 10, 4 of 4 signed\$"
	done
	# Every rank names the same leader, the one rank that says it won.
	leaders=$(printf '%s\n' "${lines[@]}" | sed -n 's/.*leader \([0-9]*\),.*/\1/p' | sort -u)
	assert_equal "$(echo "$leaders" | wc -l)" 1
	assert_line "rank $leaders: elected leader"
	assert_equal "${#lines[@]}" 9
	assert_equal "$stderr" ""
}

@test "example rpc: 4 ranks use rank 0's counter and value, and each other's direct handlers" {
	local r

	run -0 --separate-stderr example rpc 4
	for r in 1 2 3; do
		assert_line "rank $r: config says hello, with a 3-byte blob"
		assert_line "rank $r: counter refused: counter wants {\"add\": N} (EINVAL)"
	done
	for r in 0 1 2 3; do
		assert_line "rank $r: member $(((r + 1) % 4)) says it is $(((r + 1) % 4))"
	done
	assert_line 'rank 0: the counter reached 33 (11 from each of 3 ranks)'
	assert_equal "${#lines[@]}" 11
	assert_equal "$stderr" ""
}

@test "example futures: rank 0 fans calls out to 3 ranks and fetches a remote result" {
	run -0 --separate-stderr example futures 3
	assert_output - <<-'EOF'
	rank 0: round one: the squares of 1..3 add up to 14
	rank 0: round two: the squares of 101..103 add up to 31214
	rank 0: rank 2 kept 12 squared: fetched 144, then 144
	EOF
	assert_equal "$stderr" ""
}

@test "examples: outside a job each says in one line that it needs the registry" {
	local name

	for name in kv rpc futures; do
		run -1 --separate-stderr env -u WORLD_REGISTRY "$EXAMPLES/$name"
		assert_output ""
		assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
		assert_equal "$stderr" "$(printf '%s\n' "$stderr" | grep "^$name: .*Operation not supported")"
	done
}

@test "pkg-config: after meson install, a program builds with pkg-config --cflags --libs world and runs" {
	local root prefix libdir pcdir flags san

	if ! command -v pkg-config >/dev/null; then
		skip "pkg-config is not installed (share/setup.sh should install it)"
	fi
	root="$BATS_TEST_TMPDIR/root"
	run -0 meson install -C "$BUILDDIR" --no-rebuild --destdir "$root"
	prefix=$(build_option prefix)
	libdir=$(build_option libdir)
	case $libdir in /*) ;; *) libdir="$prefix/$libdir" ;; esac
	pcdir="$root$libdir/pkgconfig"
	assert [ -f "$pcdir/world.pc" ]
	assert [ -f "$root$prefix/$(build_option includedir)/world.h" ]
	if command -v scdoc >/dev/null; then
		assert [ -f "$root$prefix/$(build_option mandir)/man3/libworld.3" ]
	fi

	run -0 env PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs world
	assert_output --partial -lworld
	run -0 env PKG_CONFIG_PATH="$pcdir" pkg-config --print-requires world
	assert_line jansson
	# The .pc file names the final prefix; point it at the staged one.
	flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$root$prefix" \
		--cflags --libs world)

	cat >"$BATS_TEST_TMPDIR/app.c" <<-'EOF'
	#include <stdio.h>
	#include <world.h>

	int
	main(void)
	{
		struct world *w = NULL;
		int rc = world_open(&w);

		if (rc < 0) {
			fprintf(stderr, "app: %s\n", world_strerror(rc));
			return 1;
		}
		rc = world_barrier(w, "app", 30000);
		printf("rank %d of %d: %s\n", world_rank(w), world_size(w), world_err_name(rc));
		return world_stop(w, 30000) < 0 || rc < 0;
	}
	EOF
	# A library built with sanitizers needs their runtime in the program.
	san=$(build_option b_sanitize)
	if [ "$san" != none ]; then
		flags="-fsanitize=$san $flags"
	fi
	# shellcheck disable=SC2086 # $flags is a list of words
	run -0 cc -o "$BATS_TEST_TMPDIR/app" "$BATS_TEST_TMPDIR/app.c" $flags
	run -0 env LD_LIBRARY_PATH="$root$libdir" worldrun -n 2 --timeout 60 "$BATS_TEST_TMPDIR/app"
	assert_line 'rank 0 of 2: OK'
	assert_line 'rank 1 of 2: OK'
	run -0 env LD_LIBRARY_PATH="$root$libdir" ldd "$BATS_TEST_TMPDIR/app"
	assert_output --partial "$root$libdir/libworld.so"
}

@test "python: after meson install, the world package imports from site-packages under worldrun, and help(world) reads" {
	local root init dir libdir prefix py_env=()

	if [ ! -d "$BUILDDIR/runtime/python/world" ]; then
		skip "the world package is not built (python-package disabled: no python3-dev)"
	fi
	root="$BATS_TEST_TMPDIR/root"
	run -0 meson install -C "$BUILDDIR" --no-rebuild --destdir "$root"
	init=$(find "$root" -path '*-packages/world/__init__.py' | head -1)
	[ -n "$init" ]
	dir=$(dirname "$(dirname "$init")")
	compgen -G "$dir/world/_world*.so" >/dev/null
	prefix=$(build_option prefix)
	libdir=$(build_option libdir)
	case $libdir in /*) ;; *) libdir="$prefix/$libdir" ;; esac
	python_asan_env
	py_env=("${PY_ASAN_ENV[@]}")
	# shellcheck disable=SC2016 # the script is Python's
	run -0 env "${py_env[@]}" PYTHONPATH="$dir" LD_LIBRARY_PATH="$root$libdir" \
		PYTHONDONTWRITEBYTECODE=1 worldrun -n 2 --timeout 60 "$(build_option python)" -c '
import world
w = world.World()
print(f"rank {w.rank} of {w.size} from {world.__file__}")
w.barrier("installed")
w.stop()'
	assert_line "rank 0 of 2 from $dir/world/__init__.py"
	assert_line "rank 1 of 2 from $dir/world/__init__.py"
	run -0 env "${py_env[@]}" PYTHONPATH="$dir" LD_LIBRARY_PATH="$root$libdir" \
		PYTHONDONTWRITEBYTECODE=1 "$(build_option python)" -c 'import pydoc, world; print(pydoc.render_doc(world, renderer=pydoc.plaintext))'
	assert_line --partial "class RpcGroup"
	assert_line --partial "create_collective_group(self, ranks"
	assert_line --partial "class PeerDeadError"
}
