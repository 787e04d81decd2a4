/* SPDX-License-Identifier: MIT */
#include "fabric.h"

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "bell.h"
#include "cq.h"
#include "dl.h"
#include "fabint.h"
#include "peers.h"
#include "sink.h"
#include "wait.h"
#include "world_errors.h"

static_assert(sizeof(((struct wr_fab_req *)0)->ctx) >= sizeof(struct fi_context2),
	      "wr_fab_req has no room for a struct fi_context2");

#define MAX_SIZE (1 << 20)
#define MAX_SPIN_US 10000
/* Waiting: poll and sched_yield for this long after the spin. */
#define YIELD_NS 200000
#define YIELD_OVERSUB_NS 100000
/* wr_fab_cancel() waits this long for a cancellation, close this long
 * for all of them. */
#define CANCEL_MS 1000
#define CLOSE_MS 200

static long long
now_ms(void)
{
	return wr_fab_now_ns() / 1000000;
}

static int
drain_cb(void *arg)
{
	struct wr_fab *f = arg;
	int rc = wr_cq_drain(&f->reqs);

	return rc < 0 ? rc : 0;
}

static void
sread_done(void *arg, ssize_t ret, const struct fi_cq_tagged_entry *e)
{
	struct wr_fab *f = arg;

	wr_cq_sread_done(&f->reqs, ret, e);
}

/* ---- open and close --------------------------------------------------- */

static bool
is_shm(const char *prov)
{
	return strcmp(prov, "shm") == 0;
}

static int
check_cfg(const struct wr_fab_cfg *c)
{
	if (c == NULL || c->provider == NULL || c->provider[0] == '\0' ||
	    c->size <= 0 || c->size > MAX_SIZE || c->rank < 0 ||
	    c->rank >= c->size || c->spin_us < 0 || c->spin_us > MAX_SPIN_US) {
		return -EINVAL;
	}
	if (c->prefix == NULL) {
		return is_shm(c->provider) ? -EINVAL : 0;
	}
	if (c->prefix[0] == '\0' || strlen(c->prefix) > WR_BELL_PREFIX_MAX ||
	    strchr(c->prefix, '/') != NULL) {
		return -EINVAL;
	}
	return 0;
}

/*
 * The shm provider says only that it is not there (FI_ENODATA) when
 * /dev/shm has no room for its region (a few MiB for each rank, more for
 * many): with little room left there, that is the reason, and the rank
 * hears ENOSPC, not a fabric error.
 */
#define SHM_ROOM_MIB 128

static bool
shm_short(void)
{
	struct statvfs v;

	return statvfs("/dev/shm", &v) == 0 &&
	       (unsigned long long)v.f_bavail * v.f_frsize < (unsigned long long)SHM_ROOM_MIB << 20;
}

/*
 * The hints of fabric.md section 1. On shm the node names the region
 * (/dev/shm/<prefix>_r<rank>:<uid>:<idx>); with loopback, TCP providers
 * bind 127.0.0.1, and across hosts the address this host is reached at.
 * Each rank takes the first match for its provider.
 */
static int
get_info(const struct wr_fab_cfg *c, struct fi_info **out)
{
	struct fi_info *hints = wr_fi_dupinfo(NULL);
	char node[WR_BELL_PREFIX_MAX + 16];
	const char *np = NULL;
	int ret;

	if (hints == NULL) {
		return -ENOMEM;
	}
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = 0;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->fabric_attr->prov_name = strdup(c->provider);
	if (is_shm(c->provider)) {
		hints->caps |= FI_DIRECTED_RECV;
		hints->domain_attr->cq_data_size = 4;
		snprintf(node, sizeof(node), "%s_r%d", c->prefix, c->rank);
		np = node;
	} else if (c->loopback) {
		np = "127.0.0.1";
	} else if (c->bind_addr != NULL && c->bind_addr[0] != '\0') {
		np = c->bind_addr;
	}
	ret = hints->fabric_attr->prov_name == NULL ? -FI_ENOMEM :
		wr_fi_getinfo(FI_VERSION(1, 17), np, NULL, np ? FI_SOURCE : 0,
			   hints, out);
	wr_fi_freeinfo(hints);
	if (ret == -FI_ENODATA && is_shm(c->provider) && shm_short()) {
		wr_cq_debug("fi_getinfo: the shm provider is not there: /dev/shm has "
			    "less than %d MiB free", SHM_ROOM_MIB);
		return -ENOSPC;
	}
	return wr_cq_error("fi_getinfo", ret);
}

static int
open_objects(struct wr_fab *f, bool shm)
{
	struct fi_av_attr av = {
		.type = FI_AV_TABLE,
		.count = (size_t)(shm && f->size > 256 ? 256 : f->size),
	};
	struct fi_cq_attr cq = {
		.format = FI_CQ_FORMAT_TAGGED,
		.size = f->info->tx_attr->size + f->info->rx_attr->size,
		.wait_obj = shm ? FI_WAIT_NONE : FI_WAIT_UNSPEC,
	};
	int ret;

	ret = wr_fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (ret == 0) {
		ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	}
	if (ret == 0) {
		ret = fi_av_open(f->domain, &av, &f->av, NULL);
	}
	if (ret == 0) {
		ret = fi_cq_open(f->domain, &cq, &f->cq, NULL);
	}
	if (ret == 0) {
		ret = fi_endpoint(f->domain, f->info, &f->ep, NULL);
	}
	if (ret == 0) {
		ret = fi_ep_bind(f->ep, &f->av->fid, 0);
	}
	if (ret == 0) {
		ret = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
	}
	if (ret == 0) {
		ret = fi_enable(f->ep);
	}
	return wr_cq_error("opening the endpoint", ret);
}

/* The own name, as hex, and the peer table that expects names like it. */
static int
open_peers(struct wr_fab *f, const struct wr_fab_cfg *cfg, bool shm)
{
	unsigned char name[256];
	size_t len = sizeof(name);
	struct wr_peers_cfg pc = {
		.size = f->size,
		.bell_prefix = shm ? cfg->prefix : NULL,
	};
	int ret = fi_getname(&f->ep->fid, name, &len);

	if (ret != 0) {
		return wr_cq_error("fi_getname", ret);
	}
	if (len > sizeof(name)) {
		return WORLD_EFABRIC;
	}
	pc.addrlen = f->info->addr_format == FI_ADDR_STR ? 0 : len;
	f->addr = wr_peers_hex(name, len);
	if (f->addr == NULL) {
		return -ENOMEM;
	}
	return wr_peers_create(&pc, &f->peers);
}

static int
open_wait(struct wr_fab *f, const struct wr_fab_cfg *cfg)
{
	struct wr_wait_cfg wc = {
		.spin_ns = cfg->oversubscribed ? 0 : (int64_t)cfg->spin_us * 1000,
		.yield_ns = cfg->oversubscribed ? YIELD_OVERSUB_NS : YIELD_NS,
		.bell = f->bell,
		.cq = f->bell ? NULL : f->cq,
		.drain = drain_cb,
		.sread_done = sread_done,
		.arg = f,
	};

	return wr_wait_create(&wc, &f->wait);
}

int
wr_fab_open(const struct wr_fab_cfg *cfg, struct wr_fab **out)
{
	struct wr_fab *f;
	bool shm;
	int rc;

	if (out == NULL) {
		return -EINVAL;
	}
	*out = NULL;
	rc = check_cfg(cfg);
	if (rc == 0) {
		rc = wr_dl_load();
	}
	if (rc < 0) {
		return rc;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		return -ENOMEM;
	}
	f->rank = cfg->rank;
	f->size = cfg->size;
	wr_cq_init(&f->reqs);
	f->reqs.size = cfg->size;
	rc = get_info(cfg, &f->info);
	if (rc < 0) {
		goto fail;
	}
	shm = is_shm(f->info->fabric_attr->prov_name);
	f->shm = shm;
	f->reqs.src_in_data = shm;
	f->inject = f->info->tx_attr->inject_size;
	/* The bell exists before anyone can learn our address. */
	rc = shm ? wr_bell_create(cfg->prefix, cfg->rank, &f->bell) : 0;
	if (rc == 0 && shm) {
		rc = wr_sink_create(&f->sink);
		f->reqs.eio_is_overflow = f->sink != NULL;
	}
	f->large_len = shm && f->sink == NULL ? LARGE_LEN : SIZE_MAX;
	if (rc == 0) {
		rc = open_objects(f, shm);
	}
	if (rc == 0) {
		rc = open_peers(f, cfg, shm);
	}
	if (rc == 0) {
		rc = open_wait(f, cfg);
	}
	f->reqs.cq = f->cq;
	f->reqs.peers = f->peers;
	f->reqs.bell = f->bell;
	f->reqs.wait = f->wait;
	if (rc < 0) {
		goto fail;
	}
	*out = f;
	return 0;
fail:
	wr_fab_close(f);
	return rc;
}

static bool
none_posted(void *arg)
{
	return wr_cq_idle(arg);
}

/* Cancel everything posted and give the completions a moment to come. */
static void
cancel_all(struct wr_fab *f)
{
	wr_wait_lock(f->wait);
	wr_cq_cancel_all(&f->reqs, f->ep);
	wr_wait_unlock(f->wait);
	wr_wait_until(f->wait, none_posted, &f->reqs, now_ms() + CLOSE_MS,
		      NULL, NULL);
}

static void
close_fid(struct fid *fid)
{
	if (fid) {
		fi_close(fid);
	}
}

void
wr_fab_close(struct wr_fab *f)
{
	if (f == NULL) {
		return;
	}
	if (f->wait) {
		cancel_all(f);
	}
	close_fid(f->ep ? &f->ep->fid : NULL);
	close_fid(f->av ? &f->av->fid : NULL);
	close_fid(f->cq ? &f->cq->fid : NULL);
	close_fid(f->domain ? &f->domain->fid : NULL);
	close_fid(f->fabric ? &f->fabric->fid : NULL);
	/* What the provider did not give back is gone with the endpoint. */
	wr_cq_drop_all(&f->reqs);
	wr_fi_freeinfo(f->info);
	wr_wait_destroy(f->wait);
	wr_peers_destroy(f->peers);
	wr_bell_destroy(f->bell);
	wr_sink_destroy(f->sink);
	free(f->addr);
	wr_cq_finish(&f->reqs);
	free(f);
}

const char *
wr_fab_addr(const struct wr_fab *f)
{
	return f ? f->addr : NULL;
}

const char *
wr_fab_provider(const struct wr_fab *f)
{
	return f ? f->info->fabric_attr->prov_name : NULL;
}

size_t
wr_fab_eager_len(const struct wr_fab *f)
{
	return f && f->shm ? f->inject : 0;
}

int
wr_fab_set_peer(struct wr_fab *f, int rank, const char *addr)
{
	int rc;

	if (f == NULL) {
		return -EINVAL;
	}
	wr_wait_lock(f->wait);
	rc = wr_peers_set(f->peers, rank, addr);
	/* shm gives a message from a sender not in the AV the address
	 * FI_ADDR_UNSPEC, which matches every directed receive: insert at
	 * once (up to its 256 peers; past that, on first use). */
	if (rc == 0 && f->shm) {
		fi_addr_t fa;

		wr_peers_fi_addr(f->peers, f->av, rank, &fa);
	}
	wr_wait_unlock(f->wait);
	return rc;
}

bool
wr_fab_has_peer(const struct wr_fab *f, int rank)
{
	bool has;

	if (f == NULL) {
		return false;
	}
	wr_wait_lock(f->wait);
	has = wr_peers_has(f->peers, rank);
	wr_wait_unlock(f->wait);
	return has;
}

/* ---- waiting ---------------------------------------------------------- */

struct set {
	struct wr_fab_req *const *reqs;
	size_t n;
	bool any;
	size_t index; /* all: those before it are done; any: the one done */
};

static bool
set_ready(void *arg)
{
	struct set *s = arg;

	if (s->any) {
		for (size_t i = 0; i < s->n; i++) {
			if (wr_cq_done(s->reqs[i])) {
				s->index = i;
				return true;
			}
		}
		return false;
	}
	while (s->index < s->n && wr_cq_done(s->reqs[s->index])) {
		s->index++;
	}
	return s->index == s->n;
}

int
wr_fab_wait(struct wr_fab *f, struct wr_fab_req *const *reqs, size_t n,
	    long long deadline_ms, wr_fab_check_fn *check, void *arg)
{
	struct set s = {.reqs = reqs, .n = n};

	if (f == NULL || (reqs == NULL && n > 0)) {
		return -EINVAL;
	}
	return wr_wait_until(f->wait, set_ready, &s, deadline_ms, check, arg);
}

int
wr_fab_wait_any(struct wr_fab *f, struct wr_fab_req *const *reqs, size_t n,
		long long deadline_ms, wr_fab_check_fn *check, void *arg,
		size_t *index)
{
	struct set s = {.reqs = reqs, .n = n, .any = true};
	int rc;

	if (f == NULL || reqs == NULL || n == 0) {
		return -EINVAL;
	}
	rc = wr_wait_until(f->wait, set_ready, &s, deadline_ms, check, arg);
	if (rc == 0 && index) {
		*index = s.index;
	}
	return rc;
}

int
wr_fab_wait_shared(struct wr_fab *f, bool (*ready)(void *), void *rarg,
		   long long deadline_ms, wr_fab_check_fn *check, void *carg)
{
	if (f == NULL || ready == NULL) {
		return -EINVAL;
	}
	return wr_wait_until(f->wait, ready, rarg, deadline_ms, check, carg);
}

void
wr_fab_ring(struct wr_fab *f, const int *ranks, size_t n)
{
	if (f == NULL || !f->shm) {
		return;
	}
	wr_wait_lock(f->wait);
	for (size_t i = 0; i < n; i++) {
		if (ranks[i] != f->rank) {
			wr_peers_ring(f->peers, ranks[i]);
		}
	}
	wr_wait_unlock(f->wait);
}

static bool
req_done(void *arg)
{
	return wr_cq_done(arg);
}

void
wr_fab_cancel(struct wr_fab *f, struct wr_fab_req *r)
{
	if (f == NULL || wr_cq_done(r)) {
		return;
	}
	wr_wait_lock(f->wait);
	fi_cancel(&f->ep->fid, r->ctx);
	wr_wait_unlock(f->wait);
	if (wr_wait_until(f->wait, req_done, r, now_ms() + CANCEL_MS, NULL,
			  NULL) == 0) {
		return;
	}
	wr_wait_lock(f->wait);
	if (!wr_cq_done(r) && wr_cq_orphan(&f->reqs, r) == 0) {
		wr_cq_debug("rank %d: a request outlived its cancellation", f->rank);
	}
	wr_wait_unlock(f->wait);
}

void
wr_fab_interrupt(struct wr_fab *f)
{
	if (f) {
		wr_wait_interrupt(f->wait);
	}
}
