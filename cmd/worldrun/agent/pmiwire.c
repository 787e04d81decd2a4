/* SPDX-License-Identifier: MIT */
#include "pmiwire.h"

#include <errno.h>
#include <string.h>

static bool
key_ok(const char *k)
{
	return k[0] != '\0' &&
	       strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789_/-") == strlen(k);
}

/* One word from *@p on: cut at its '=' and its end, backslashes undone. */
static int
word(char **p, const char **key, const char **val)
{
	char *s = *p, *out, *eq = NULL;

	*key = s;
	for (out = s; *s != '\0' && *s != ' '; s++) {
		if (*s == '\\' && s[1] != '\0') {
			s++;
		} else if (*s == '=' && eq == NULL) {
			eq = out;
		}
		*out++ = *s;
	}
	while (*s == ' ') {
		s++;
	}
	*out = '\0';
	*p = s;
	if (eq == NULL) {
		return -EINVAL;
	}
	*eq = '\0';
	*val = eq + 1;
	return key_ok(*key) ? 0 : -EINVAL;
}

int
wr_pmi_parse(char *line, size_t len, struct wr_pmi_msg *m)
{
	char *p = line;

	*m = (struct wr_pmi_msg){ 0 };
	if (memchr(line, '\0', len) != NULL) {
		return -EINVAL;
	}
	/* A \r before the newline, as some clients send. */
	if (len > 0 && line[len - 1] == '\r') {
		line[--len] = '\0';
	}
	while (*p == ' ') {
		p++;
	}
	while (*p != '\0') {
		if (m->n == WR_PMI_ARGS_MAX || word(&p, &m->key[m->n], &m->val[m->n]) < 0) {
			return -EINVAL;
		}
		m->n++;
	}
	if (m->n == 0 || (strcmp(m->key[0], "cmd") != 0 && strcmp(m->key[0], "mcmd") != 0) ||
	    m->val[0][0] == '\0') {
		return -EINVAL;
	}
	m->cmd = m->val[0];
	m->mcmd = strcmp(m->key[0], "mcmd") == 0;
	return 0;
}

const char *
wr_pmi_arg(const struct wr_pmi_msg *m, const char *key)
{
	for (int i = 1; i < m->n; i++) {
		if (strcmp(m->key[i], key) == 0) {
			return m->val[i];
		}
	}
	return NULL;
}

/* Append @s (escaped if @esc) at *@at; false when @buf is full. */
static bool
put(char *buf, size_t size, size_t *at, const char *s, bool esc)
{
	for (; *s != '\0'; s++) {
		if (esc && (*s == ' ' || *s == '\\')) {
			if (*at + 1 >= size) {
				return false;
			}
			buf[(*at)++] = '\\';
		}
		if (*at + 1 >= size) {
			return false;
		}
		buf[(*at)++] = *s;
	}
	return true;
}

int
wr_pmi_format(char *buf, size_t size, const char *cmd, int n,
	      const char *const *keys, const char *const *vals)
{
	size_t at = 0;
	bool ok = put(buf, size, &at, "cmd=", false) && put(buf, size, &at, cmd, false);

	for (int i = 0; ok && i < n; i++) {
		ok = put(buf, size, &at, " ", false) && put(buf, size, &at, keys[i], false) &&
		     put(buf, size, &at, "=", false) && put(buf, size, &at, vals[i], true);
	}
	ok = ok && put(buf, size, &at, "\n", false);
	if (!ok) {
		if (size > 0) {
			buf[0] = '\0';
		}
		return -ENOSPC;
	}
	buf[at] = '\0';
	return (int)at;
}
