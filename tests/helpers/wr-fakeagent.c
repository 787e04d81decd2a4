/* SPDX-License-Identifier: MIT */
/*
 * wr-fakeagent HOST ...: a remote shell whose "agent" breaks the rules,
 * for worldrun's --rsh. It reads the SETUP frame, answers READY, reads
 * START, then writes the events that WR_FAKE_HOST or else WR_FAKE lists,
 * separated by ';': "started R", "exited R STATUS", "finished R", "done
 * COUNT [ERRNO]", "out R TEXT", "failed R STAGE", "flood R MIB" (MIB MiB
 * of output lines for R, whatever PAUSE says: it reads nothing
 * meanwhile), "joined R" (an answer to a JOINED that begins at rank R),
 * "sleep MS", "quit" (exit at once); then it waits for the end of its
 * stdin (an hour at most) and exits 0.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read one frame whole and forget it; 0 at end of input. */
static int
skip_frame(void)
{
	unsigned char len[4], buf[4096];
	size_t n, got = 0;

	for (size_t have = 0; have < 4; have += n) {
		ssize_t r = read(0, len + have, 4 - have);

		if (r <= 0) {
			return 0;
		}
		n = (size_t)r;
	}
	n = (size_t)len[0] << 24 | (size_t)len[1] << 16 | (size_t)len[2] << 8 | len[3];
	/* The blob's length is in the JSON: a SETUP has one; read it all. */
	while (got < n) {
		ssize_t r = read(0, buf, n - got < sizeof(buf) ? n - got : sizeof(buf));

		if (r <= 0) {
			return 0;
		}
		got += (size_t)r;
		if (got == n && memmem(buf, (size_t)r, "\"blob\":", 7) != NULL) {
			n += (size_t)atol((char *)memmem(buf, (size_t)r, "\"blob\":", 7) + 7);
		}
	}
	return 1;
}

static void
frame(const char *json, const char *blob)
{
	char head[8192];
	int len = blob != NULL
		? snprintf(head + 4, sizeof(head) - 4, "%.*s,\"blob\":%zu}",
			   (int)strlen(json) - 1, json, strlen(blob))
		: snprintf(head + 4, sizeof(head) - 4, "%s", json);
	uint32_t be = htonl((uint32_t)len);

	memcpy(head, &be, 4);
	if (write(1, head, (size_t)len + 4) < 0 ||
	    (blob != NULL && write(1, blob, strlen(blob)) < 0)) {
		exit(1);
	}
}

/* @mib MiB of lines of 1 KiB for rank @rank, 63 of them to a frame. */
static void
flood(int rank, int mib)
{
	static char lines[63 * 1024 + 1];
	char json[256];

	memset(lines, 'x', sizeof(lines) - 1);
	for (int i = 1; i <= 63; i++) {
		lines[i * 1024 - 1] = '\n';
	}
	snprintf(json, sizeof(json), "{\"ev\":\"output\",\"rank\":%d,\"stream\":0,"
		 "\"partial\":false,\"eof\":false}", rank);
	for (long left = (long)mib * 1024; left > 0; left -= 63) {
		if (left < 63) {
			lines[left * 1024] = '\0';
		}
		frame(json, lines);
	}
}

static void
event(char *e)
{
	char json[512], text[256] = "";
	int a = 0, b = 0;

	if (sscanf(e, "started %d", &a) == 1) {
		snprintf(json, sizeof(json), "{\"ev\":\"started\",\"rank\":%d,\"pid\":4242,\"mono\":1.0}", a);
	} else if (sscanf(e, "exited %d %d", &a, &b) == 2) {
		snprintf(json, sizeof(json), "{\"ev\":\"exited\",\"rank\":%d,\"pid\":4242,"
			 "\"wstatus\":%d,\"maxrss_kib\":0,\"mono\":2.0}", a, b << 8);
	} else if (sscanf(e, "finished %d", &a) == 1) {
		snprintf(json, sizeof(json), "{\"ev\":\"finished\",\"rank\":%d,\"forced\":false}", a);
	} else if (sscanf(e, "done %d %d", &a, &b) >= 1) {
		snprintf(json, sizeof(json), "{\"ev\":\"start_done\",\"count\":%d,\"err\":%d}", a,
			 b);
	} else if (sscanf(e, "joined %d", &a) == 1) {
		snprintf(json, sizeof(json), "{\"ev\":\"joined\",\"rank\":%d}", a);
	} else if (sscanf(e, "sleep %d", &a) == 1) {
		usleep((useconds_t)a * 1000);
		return;
	} else if (sscanf(e, "failed %d %d", &a, &b) == 2) {
		snprintf(json, sizeof(json), "{\"ev\":\"start_failed\",\"rank\":%d,\"err\":2,\"stage\":%d}", a, b);
	} else if (sscanf(e, "out %d %200[^\n]", &a, text) == 2) {
		snprintf(json, sizeof(json), "{\"ev\":\"output\",\"rank\":%d,\"stream\":0,"
			 "\"partial\":false,\"eof\":false}", a);
		strcat(text, "\n");
		frame(json, text);
		return;
	} else if (sscanf(e, "flood %d %d", &a, &b) == 2) {
		flood(a, b);
		return;
	} else if (strcmp(e, "quit") == 0) {
		exit(0);
	} else {
		fprintf(stderr, "wr-fakeagent: %s: no such event\n", e);
		exit(2);
	}
	frame(json, NULL);
}

int
main(int argc, char **argv)
{
	char name[256];
	const char *mine;
	char *script;
	char *save = NULL;
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char buf[4096];

	snprintf(name, sizeof(name), "WR_FAKE_%s", argc > 1 ? argv[1] : "");
	mine = getenv(name) != NULL ? getenv(name) : getenv("WR_FAKE");
	script = strdup(mine != NULL ? mine : "");
	if (!skip_frame()) {
		return 1;
	}
	frame("{\"ev\":\"ready\",\"status\":0,\"addr\":\"\"}", NULL);
	if (!skip_frame()) {
		return 1;
	}
	for (char *e = strtok_r(script, ";", &save); e != NULL; e = strtok_r(NULL, ";", &save)) {
		event(e);
	}
	while (poll(&p, 1, 3600 * 1000) > 0 && read(0, buf, sizeof(buf)) > 0) {
	}
	free(script);
	return 0;
}
