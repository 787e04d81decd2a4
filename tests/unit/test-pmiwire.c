/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for pmiwire: the lines MPICH sends parse into their command
 * and words, escapes come undone, and garbage, truncated and overlong
 * lines, bad keys and NUL bytes are refused; answers are written escaped,
 * and never past their buffer.
 */
#include "pmiwire.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int
parse(const char *text, struct wr_pmi_msg *m, char buf[WR_PMI_LINE_MAX + 1])
{
	size_t len = strlen(text);

	memcpy(buf, text, len + 1);
	return wr_pmi_parse(buf, len, m);
}

int
main(void)
{
	char buf[WR_PMI_LINE_MAX + 1], out[64];
	const char *k[] = { "rc", "msg" }, *v[] = { "0", "a b\\c" };
	struct wr_pmi_msg m;
	char big[4 * WR_PMI_ARGS_MAX + 16] = "cmd=x";

	plan(24);
	is_int(parse("cmd=init pmi_version=1 pmi_subversion=1", &m, buf), 0, "init parses");
	is_str(m.cmd, "init", "its command");
	is_str(wr_pmi_arg(&m, "pmi_subversion"), "1", "its words");
	ok(wr_pmi_arg(&m, "cmd") == NULL && wr_pmi_arg(&m, "nope") == NULL,
	   "cmd is no argument, and a missing word is NULL");
	is_int(parse("cmd=put kvsname=kvs_1 key=-bcast-1-0 value=2F6465", &m, buf), 0,
	       "a put of MPICH's keys");
	is_str(wr_pmi_arg(&m, "key"), "-bcast-1-0", "keys may start with a dash");
	is_int(parse("cmd=put kvsname=k key=a value=x\\ y\\\\z", &m, buf), 0,
	       "an escaped value");
	is_str(wr_pmi_arg(&m, "value"), "x y\\z", "comes out unescaped");
	is_int(parse("cmd=get_result rc=0 value=", &m, buf), 0, "an empty value");
	is_str(wr_pmi_arg(&m, "value"), "", "is empty");
	is_int(parse("mcmd=spawn", &m, buf), 0, "a multi-line request's first line");
	ok(m.mcmd && strcmp(m.cmd, "spawn") == 0, "is known as such");
	is_int(parse("  cmd=barrier_in  \r", &m, buf), 0, "blanks and a \\r around it");
	is_str(m.cmd, "barrier_in", "are no part of it");
	is_int(parse("", &m, buf), -EINVAL, "an empty line is refused");
	is_int(parse("key=a cmd=get", &m, buf), -EINVAL, "so is one that does not start with cmd");
	is_int(parse("cmd=", &m, buf), -EINVAL, "one without a command");
	is_int(parse("cmd=get key", &m, buf), -EINVAL, "a word without =");
	is_int(parse("cmd=get k$y=1", &m, buf), -EINVAL, "a key of other characters");
	for (int i = 0; i < WR_PMI_ARGS_MAX; i++) {
		strcat(big, " a=1");
	}
	is_int(parse(big, &m, buf), -EINVAL, "more words than a request has");
	memcpy(buf, "cmd=get\0key=a", 14);
	is_int(wr_pmi_parse(buf, 13, &m), -EINVAL, "a NUL byte in the line");
	is_int(wr_pmi_format(out, sizeof(out), "put_result", 2, k, v),
	       (int)strlen("cmd=put_result rc=0 msg=a\\ b\\\\c\n"), "an answer's length");
	is_str(out, "cmd=put_result rc=0 msg=a\\ b\\\\c\n", "with its value escaped");
	is_int(wr_pmi_format(out, 20, "put_result", 2, k, v), -ENOSPC,
	       "an answer that does not fit is not written");
	return 0;
}
