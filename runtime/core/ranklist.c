/* SPDX-License-Identifier: MIT */
#include "ranklist.h"

#include <stdio.h>
#include <string.h>

size_t
wr_ranklist_text(const int *ranks, size_t n, char *buf, size_t room)
{
	size_t at = 0;

	if (room > 0) {
		buf[0] = '\0';
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		char part[32];

		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) {
			j++;
		}
		if (j == i) {
			snprintf(part, sizeof(part), "%s%d", i > 0 ? "," : "", ranks[i]);
		} else {
			snprintf(part, sizeof(part), "%s%d-%d", i > 0 ? "," : "",
				 ranks[i], ranks[j]);
		}
		if (at + strlen(part) + 4 > room && room >= 4) {
			snprintf(buf + (at < room - 4 ? at : room - 4), 4, "...");
			return at + strlen(part);
		}
		at += (size_t)snprintf(buf + at, room - at, "%s", part);
		i = j + 1;
	}
	return at;
}
