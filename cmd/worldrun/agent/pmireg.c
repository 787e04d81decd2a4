/* SPDX-License-Identifier: MIT */
#include "pmireg.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "greet.h"
#include "link.h"
#include "regclient.h"
#include "regproto.h"
#include "world_errors.h"

/* The ids of the handshake's two requests; the others' come after. */
#define HELLO_ID 1
#define PROOF_ID 2

struct call {
	struct call *next;
	json_int_t id;
	json_t *req;   /* until sent */
	void *blob;    /* until sent */
	size_t len;
	wr_pmireg_cb *cb;
	void *arg;
};

struct wr_pmireg {
	struct wr_pmireg_cfg cfg;
	char *secret;
	struct wr_link *link;
	struct wr_greet_client greet;
	bool proven;
	bool broken;
	json_int_t next_id;
	struct call *calls; /* under way or waiting for the proof, oldest first */
};

static void
fail_all(struct wr_pmireg *r, int rc)
{
	struct call *c;

	r->broken = true;
	while ((c = r->calls) != NULL) {
		r->calls = c->next;
		json_decref(c->req);
		free(c->blob);
		c->cb(c->arg, rc, NULL, NULL, 0);
		free(c);
	}
}

static int
send_call(struct wr_pmireg *r, struct call *c)
{
	int rc = json_object_set_new(c->req, "id", json_integer(c->id)) < 0 ? -ENOMEM : 0;

	if (rc == 0) {
		rc = wr_link_send_attach(r->link, c->req, c->blob, c->len);
		c->blob = NULL;
	}
	json_decref(c->req);
	c->req = NULL;
	return rc;
}

/* The server's challenge, checked, and our proof (greet.h). */
static int
prove(struct wr_pmireg *r, json_t *result)
{
	json_t *req = NULL;
	int rc = wr_greet_prove(&r->greet, result, PROOF_ID, &req);

	if (rc == 0) {
		rc = wr_link_send(r->link, req, NULL, 0);
	}
	json_decref(req);
	return rc;
}

static void
answer(struct wr_pmireg *r, json_int_t id, json_t *msg, void *blob, size_t len)
{
	json_t *err = json_object_get(msg, "error");
	int rc = err != NULL ? (int)json_integer_value(json_object_get(err, "code")) : 0;
	struct call **p = &r->calls, *c;

	if (err != NULL && rc >= 0) {
		rc = WORLD_EPROTO;
	}
	while (*p != NULL && (*p)->id != id) {
		p = &(*p)->next;
	}
	if ((c = *p) == NULL) {
		return;
	}
	*p = c->next;
	c->cb(c->arg, rc, rc == 0 ? json_object_get(msg, "result") : NULL, blob, len);
	free(c);
}

static void
on_frame(struct wr_link *l, json_t *msg, void *blob, size_t len, void *arg)
{
	struct wr_pmireg *r = arg;
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	int rc = 0;

	if (id == HELLO_ID || id == PROOF_ID) {
		rc = json_object_get(msg, "error") != NULL ? WORLD_EAUTH
		     : id == HELLO_ID ? prove(r, json_object_get(msg, "result")) : 0;
		if (rc == 0 && id == PROOF_ID) {
			r->proven = true;
			for (struct call *c = r->calls; rc == 0 && c != NULL; c = c->next) {
				rc = send_call(r, c);
			}
		}
	} else {
		answer(r, id, msg, blob, len);
	}
	json_decref(msg);
	free(blob);
	if (rc != 0) {
		wr_link_close(r->link);
		r->link = NULL;
		fail_all(r, WORLD_EREGISTRY);
	}
}

static void
on_lost(struct wr_link *l, int rc, void *arg)
{
	struct wr_pmireg *r = arg;

	wr_link_close(r->link);
	r->link = NULL;
	fail_all(r, WORLD_EREGISTRY);
}

int
wr_pmireg_open(const struct wr_pmireg_cfg *cfg, struct wr_pmireg **out)
{
	struct wr_pmireg *r = calloc(1, sizeof(*r));
	struct wr_link_cfg lc = { .base = cfg->base, .frame = on_frame, .lost = on_lost };
	json_t *hello = NULL;
	int fd, rc;

	*out = NULL;
	if (r == NULL || (r->secret = strdup(cfg->secret)) == NULL) {
		free(r);
		return -ENOMEM;
	}
	r->cfg = *cfg;
	r->greet = (struct wr_greet_client){ .secret = r->secret, .server = "registry",
					     .rank = cfg->rank, .role = "tool" };
	r->next_id = PROOF_ID;
	lc.arg = r;
	fd = wr_regclient_connect(cfg->endpoints, cfg->timeout_ms);
	rc = fd < 0 ? fd : wr_link_open(&lc, fd, &r->link);
	if (rc == 0) {
		hello = wr_greet_hello_new(&r->greet, HELLO_ID);
		rc = hello != NULL ? wr_link_send(r->link, hello, NULL, 0) : -ENOMEM;
		json_decref(hello);
	}
	if (rc < 0) {
		wr_pmireg_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
wr_pmireg_once(const struct wr_pmireg_cfg *cfg, struct wr_pmireg **r)
{
	if (*r != NULL) {
		return 0;
	}
	if (cfg->endpoints == NULL || cfg->secret == NULL) {
		return WORLD_EREGISTRY;
	}
	return wr_pmireg_open(cfg, r);
}

int
wr_pmireg_call(struct wr_pmireg *r, json_t *req_new, const void *blob, size_t len,
	       wr_pmireg_cb *cb, void *arg)
{
	struct call *c = NULL, **tail = &r->calls;
	int rc = r->broken ? WORLD_EREGISTRY : 0;

	if (rc == 0 && (req_new == NULL || (c = calloc(1, sizeof(*c))) == NULL ||
			(len > 0 && (c->blob = malloc(len)) == NULL))) {
		rc = -ENOMEM;
	}
	if (rc < 0) {
		json_decref(req_new);
		free(c);
		return rc;
	}
	if (len > 0) {
		memcpy(c->blob, blob, len);
	}
	*c = (struct call){ .id = ++r->next_id, .req = req_new, .blob = c->blob, .len = len,
			    .cb = cb, .arg = arg };
	while (*tail != NULL) {
		tail = &(*tail)->next;
	}
	*tail = c;
	rc = r->proven ? send_call(r, c) : 0;
	if (rc < 0) {
		*tail = NULL;
		free(c);
	}
	return rc;
}

void
wr_pmireg_close(struct wr_pmireg *r)
{
	if (r == NULL) {
		return;
	}
	wr_link_close(r->link);
	r->link = NULL;
	/* Their callbacks free what they carry. */
	fail_all(r, WORLD_EREGISTRY);
	free(r->secret);
	free(r);
}
