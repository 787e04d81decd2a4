/* SPDX-License-Identifier: MIT */
#include "procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A stat line is about 300 bytes; a long kernel thread name adds 64. */
#define STAT_MAX 2048

const char *
wr_procinfo_state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X': case 'x': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	case 'W': return "waking";
	case 'K': return "wakekill";
	}
	return "unknown";
}

static void
copy_comm(char *dst, size_t size, const char *from, const char *to)
{
	size_t n = (size_t)(to - from);

	if (n >= size) {
		n = size - 1;
	}
	memcpy(dst, from, n);
	dst[n] = '\0';
}

int
wr_procinfo_parse(const char *line, struct wr_procinfo *out)
{
	const char *open = strchr(line, '(');
	const char *close = strrchr(line, ')');
	unsigned long utime, stime;
	long ticks = sysconf(_SC_CLK_TCK);
	int ppid, pgrp, n;

	if (open == NULL || close == NULL || close < open || ticks <= 0) {
		return -EPROTO;
	}
	memset(out, 0, sizeof(*out));
	/* Fields 3 to 20 of proc(5): state, ppid, pgrp, 8 skipped, utime,
	 * stime, 4 skipped, num_threads. */
	n = sscanf(close + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u"
		   " %lu %lu %*d %*d %*d %*d %ld",
		   &out->state, &ppid, &pgrp, &utime, &stime, &out->threads);
	if (n != 6) {
		return -EPROTO;
	}
	copy_comm(out->comm, sizeof(out->comm), open + 1, close);
	out->ppid = ppid;
	out->pgrp = pgrp;
	out->cpu_s = (double)(utime + stime) / (double)ticks;
	return 0;
}

int
wr_procinfo_read(pid_t pid, struct wr_procinfo *out)
{
	char path[64], line[STAT_MAX];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return errno == ENOENT ? -ESRCH : -errno;
	}
	/* The kernel writes the line in one go: one read() takes it whole. */
	do {
		n = read(fd, line, sizeof(line) - 1);
	} while (n < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (n < 0) {
		return -err;
	}
	/* Reaped between open() and read(): the kernel gives nothing. */
	if (n == 0) {
		return -ESRCH;
	}
	line[n] = '\0';
	return wr_procinfo_parse(line, out);
}
