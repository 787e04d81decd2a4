/* SPDX-License-Identifier: MIT */
/*
 * wr-pmix MODE: a PMIx client of its own (OpenPMIx's client library),
 * for what MPI programs do not ask of the server. Each rank prints what
 * it found, one line each.
 * some: every rank puts "wr.v" = its rank and commits; the even ranks
 * fence among themselves only (collecting data) and each reads the next
 * even rank's value; then every rank fences with all.
 * direct: every rank but the last puts "wr.d" = 10 * rank + 1, every
 * rank commits, fences with nobody, and reads every rank's value: a
 * remote rank's comes by direct modex, through the hosts' servers (the
 * last rank's is not found); then every rank fences.
 * hosts: every rank prints each rank's host name (PMIX_HOSTNAME).
 * names: rank 0 publishes a name twice, a name of an int, looks up a
 * name nobody published, unpublishes its name twice.
 * spawn: rank 0 spawns two "wr-pmix kid" (PMIx_Spawn) and publishes
 * their namespace as "wr-kids"; every rank looks it up and prints what
 * its own server says of that namespace, "rank R: kids: size S, nodes
 * N, here L, on H" (L: their PMIX_LOCAL_SIZE, or "none" where this host
 * has none of them; H: kid 0's host); each kid prints the same of its
 * own namespace, "kid K: size S, nodes N, here L, on H".
 * connect: every rank but the last says "rank R: connecting", connects
 * with all (PMIx_Connect), says how that went and waits to be stopped;
 * the last never joins: it says "rank R: idle" and waits for SIGUSR1,
 * then exits 3 without PMIx_Finalize. "connect catch": the connecting
 * ranks catch SIGTERM, then finalize and exit 0.
 */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pmix_proc_t me;

static int
fence_even(uint32_t size)
{
	pmix_proc_t *procs;
	pmix_info_t info;
	bool yes = true;
	size_t n = 0;
	int rc;

	PMIX_PROC_CREATE(procs, size);
	for (uint32_t r = 0; r < size; r += 2) {
		/* The macro reads its first argument more than once. */
		PMIX_LOAD_PROCID(&procs[n], me.nspace, r);
		n++;
	}
	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence(procs, n, &info, 1);
	PMIX_INFO_DESTRUCT(&info);
	PMIX_PROC_FREE(procs, size);
	return rc;
}

/* Rank @r's @key (PMIx_Get), one line: "rank ME: got V from R" for a
 * number, "rank ME: rank R is on V" for a string (a host name). */
static void
print_value(uint32_t r, const char *key)
{
	pmix_value_t *got = NULL;
	pmix_proc_t peer;
	int rc;

	PMIX_LOAD_PROCID(&peer, me.nspace, r);
	rc = PMIx_Get(&peer, key, NULL, 0, &got);
	if (rc == PMIX_SUCCESS && got->type == PMIX_UINT32) {
		printf("rank %u: got %u from %u\n", me.rank, got->data.uint32, r);
	} else if (rc == PMIX_SUCCESS && got->type == PMIX_STRING) {
		printf("rank %u: rank %u is on %s\n", me.rank, r, got->data.string);
	} else {
		printf("rank %u: no value from %u: %s\n", me.rank, r, PMIx_Error_string(rc));
	}
	if (got != NULL) {
		PMIX_VALUE_RELEASE(got);
	}
}

/* Put @key = @value (unless @key is NULL) and commit. */
static void
put_one(const char *key, uint32_t value)
{
	pmix_value_t v;

	if (key != NULL) {
		PMIX_VALUE_CONSTRUCT(&v);
		PMIX_VALUE_LOAD(&v, &value, PMIX_UINT32);
		PMIx_Put(PMIX_GLOBAL, key, &v);
		PMIX_VALUE_DESTRUCT(&v);
	}
	PMIx_Commit();
}

static void
some(uint32_t size)
{
	uint32_t peer = (me.rank + 2) % ((size + 1) / 2 * 2);
	int rc;

	put_one("wr.v", me.rank);
	if (me.rank % 2 == 0) {
		rc = fence_even(size);
		if (rc == PMIX_SUCCESS) {
			print_value(peer, "wr.v");
		} else {
			printf("rank %u: no value from %u: %s\n", me.rank, peer,
			       PMIx_Error_string(rc));
		}
	}
	rc = PMIx_Fence(NULL, 0, NULL, 0);
	printf("rank %u: fenced with all: %s\n", me.rank, PMIx_Error_string(rc));
}

static void
direct(uint32_t size)
{
	int rc;

	put_one(me.rank + 1 < size ? "wr.d" : NULL, 10 * me.rank + 1);
	for (uint32_t r = 0; r < size; r++) {
		print_value(r, "wr.d");
	}
	rc = PMIx_Fence(NULL, 0, NULL, 0);
	printf("rank %u: fenced with all: %s\n", me.rank, PMIx_Error_string(rc));
}

static void
hosts(uint32_t size)
{
	for (uint32_t r = 0; r < size; r++) {
		print_value(r, PMIX_HOSTNAME);
	}
}

/* @key of @proc (PMIx_Get), as a number or a string into @out; "none"
 * where there is none. */
static void
get_text(const pmix_proc_t *proc, const char *key, char *out, size_t size)
{
	pmix_value_t *got = NULL;

	snprintf(out, size, "none");
	if (PMIx_Get(proc, key, NULL, 0, &got) != PMIX_SUCCESS) {
		return;
	}
	if (got->type == PMIX_UINT32) {
		snprintf(out, size, "%u", got->data.uint32);
	} else if (got->type == PMIX_STRING) {
		snprintf(out, size, "%s", got->data.string);
	}
	PMIX_VALUE_RELEASE(got);
}

/* What this host's server says of namespace @ns, after @head. */
static void
describe(const char *head, const pmix_nspace_t ns)
{
	pmix_proc_t job, kid0;
	char size[64], nodes[64], here[64], host[256];

	PMIX_LOAD_PROCID(&job, ns, PMIX_RANK_WILDCARD);
	PMIX_LOAD_PROCID(&kid0, ns, 0);
	get_text(&job, PMIX_JOB_SIZE, size, sizeof(size));
	get_text(&job, PMIX_NUM_NODES, nodes, sizeof(nodes));
	get_text(&job, PMIX_LOCAL_SIZE, here, sizeof(here));
	get_text(&kid0, PMIX_HOSTNAME, host, sizeof(host));
	printf("%s: size %s, nodes %s, here %s, on %s\n", head, size, nodes, here, host);
}

static const char *
publish(const char *key, const void *value, pmix_data_type_t type);

static void
spawn(void)
{
	pmix_app_t app;
	pmix_pdata_t pd;
	pmix_info_t wait;
	pmix_nspace_t ns;
	char head[64];
	bool yes = true;
	int rc = PMIX_SUCCESS;

	if (me.rank == 0) {
		PMIX_APP_CONSTRUCT(&app);
		app.cmd = strdup("wr-pmix");
		PMIX_ARGV_APPEND(rc, app.argv, "wr-pmix");
		PMIX_ARGV_APPEND(rc, app.argv, "kid");
		app.maxprocs = 2;
		rc = PMIx_Spawn(NULL, 0, &app, 1, ns);
		PMIX_APP_DESTRUCT(&app);
		printf("rank 0: spawn: %s\n", PMIx_Error_string(rc));
		publish("wr-kids", ns, PMIX_STRING);
	}
	PMIX_PDATA_CONSTRUCT(&pd);
	PMIX_LOAD_KEY(pd.key, "wr-kids");
	PMIX_INFO_LOAD(&wait, PMIX_WAIT, &yes, PMIX_BOOL);
	rc = PMIx_Lookup(&pd, 1, &wait, 1);
	if (rc == PMIX_SUCCESS && pd.value.type == PMIX_STRING) {
		snprintf(head, sizeof(head), "rank %u: kids", me.rank);
		describe(head, pd.value.data.string);
	} else {
		printf("rank %u: no kids: %s\n", me.rank, PMIx_Error_string(rc));
	}
	PMIX_INFO_DESTRUCT(&wait);
	PMIX_PDATA_DESTRUCT(&pd);
}

static const char *
publish(const char *key, const void *value, pmix_data_type_t type)
{
	pmix_info_t info;
	int rc;

	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, key, value, type);
	rc = PMIx_Publish(&info, 1);
	PMIX_INFO_DESTRUCT(&info);
	return PMIx_Error_string(rc);
}

static const char *
unpublish(const char *key)
{
	char *keys[] = { (char *)key, NULL };

	return PMIx_Error_string(PMIx_Unpublish(keys, NULL, 0));
}

static void
names(void)
{
	pmix_pdata_t pd;
	int forty = 40;

	if (me.rank != 0) {
		return;
	}
	printf("publish: %s\n", publish("wr-name", "port-a", PMIX_STRING));
	printf("publish again: %s\n", publish("wr-name", "port-b", PMIX_STRING));
	printf("publish an int: %s\n", publish("wr-int", &forty, PMIX_INT));
	PMIX_PDATA_CONSTRUCT(&pd);
	PMIX_LOAD_KEY(pd.key, "wr-name");
	if (PMIx_Lookup(&pd, 1, NULL, 0) == PMIX_SUCCESS && pd.value.type == PMIX_STRING) {
		printf("lookup: %s\n", pd.value.data.string);
	}
	PMIX_PDATA_DESTRUCT(&pd);
	PMIX_PDATA_CONSTRUCT(&pd);
	PMIX_LOAD_KEY(pd.key, "wr-nobody");
	printf("lookup of none: %s\n", PMIx_Error_string(PMIx_Lookup(&pd, 1, NULL, 0)));
	PMIX_PDATA_DESTRUCT(&pd);
	printf("unpublish: %s\n", unpublish("wr-name"));
	printf("unpublish again: %s\n", unpublish("wr-name"));
}

static void
leave(int sig)
{
	_exit(3);
}

static volatile sig_atomic_t termed;

static void
on_term(int sig)
{
	termed = 1;
}

static void
connect_all(uint32_t size, bool catch)
{
	pmix_proc_t all;
	sigset_t term, old;
	int rc;

	/* Blocked until the wait below, which takes it without a race. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (catch) {
		sigprocmask(SIG_BLOCK, &term, &old);
	}
	if (me.rank + 1 == size) {
		signal(SIGUSR1, leave);
		printf("rank %u: idle\n", me.rank);
		fflush(stdout);
		for (;;) {
			pause();
		}
	}
	if (catch) {
		signal(SIGTERM, on_term);
	}
	printf("rank %u: connecting\n", me.rank);
	fflush(stdout);
	PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Connect(&all, 1, NULL, 0);
	printf("rank %u: connect: %s\n", me.rank, PMIx_Error_string(rc));
	fflush(stdout);
	while (!termed) {
		if (catch) {
			sigsuspend(&old);
		} else {
			pause();
		}
	}
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "some";
	pmix_value_t *val = NULL;
	pmix_proc_t job;
	uint32_t size = 0;
	int rc = PMIx_Init(&me, NULL, 0);

	if (rc != PMIX_SUCCESS) {
		printf("no PMIx server: %s\n", PMIx_Error_string(rc));
		return 1;
	}
	PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val) == PMIX_SUCCESS) {
		size = val->data.uint32;
		PMIX_VALUE_RELEASE(val);
	}
	if (strcmp(mode, "some") == 0) {
		some(size);
	} else if (strcmp(mode, "direct") == 0) {
		direct(size);
	} else if (strcmp(mode, "hosts") == 0) {
		hosts(size);
	} else if (strcmp(mode, "spawn") == 0) {
		spawn();
	} else if (strcmp(mode, "connect") == 0) {
		connect_all(size, argc > 2 && strcmp(argv[2], "catch") == 0);
	} else if (strcmp(mode, "kid") == 0) {
		char head[64];

		snprintf(head, sizeof(head), "kid %u", me.rank);
		describe(head, me.nspace);
	} else {
		names();
	}
	fflush(stdout);
	PMIx_Finalize(NULL, 0);
	return 0;
}
