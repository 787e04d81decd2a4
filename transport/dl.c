/* SPDX-License-Identifier: MIT */
#include "dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

/*
 * The one process-wide state of transport/: libfabric is loaded once per
 * process, whatever endpoints come and go, as a linked library would be.
 */
static struct {
	pthread_once_t once;
	int rc;
	int (*getinfo)(uint32_t, const char *, const char *, uint64_t,
		       const struct fi_info *, struct fi_info **);
	void (*freeinfo)(struct fi_info *);
	struct fi_info *(*dupinfo)(const struct fi_info *);
	int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
	const char *(*strerror)(int);
} fi = { .once = PTHREAD_ONCE_INIT };

/* dlsym() into a function pointer of any type, as POSIX allows. */
static bool
resolve(void *lib, const char *name, const char *version, void *fn, size_t size)
{
	void *sym = dlvsym(lib, name, version);

	if (sym == NULL) {
		sym = dlsym(lib, name);
	}
	memcpy(fn, &sym, size);
	return sym != NULL;
}

static void
load(void)
{
	struct sigaction before[NSIG];
	void *lib;
	bool ok;

	for (int s = 1; s < NSIG; s++) {
		sigaction(s, NULL, &before[s]);
	}
	lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
	/* What the providers' constructors changed goes back as it was. */
	for (int s = 1; s < NSIG; s++) {
		if (s != SIGKILL && s != SIGSTOP) {
			sigaction(s, &before[s], NULL);
		}
	}
	ok = lib != NULL &&
	     resolve(lib, "fi_getinfo", "FABRIC_1.3", &fi.getinfo, sizeof(fi.getinfo)) &&
	     resolve(lib, "fi_freeinfo", "FABRIC_1.3", &fi.freeinfo, sizeof(fi.freeinfo)) &&
	     resolve(lib, "fi_dupinfo", "FABRIC_1.3", &fi.dupinfo, sizeof(fi.dupinfo)) &&
	     resolve(lib, "fi_fabric", "FABRIC_1.1", &fi.fabric, sizeof(fi.fabric)) &&
	     resolve(lib, "fi_strerror", "FABRIC_1.0", &fi.strerror, sizeof(fi.strerror));
	fi.rc = ok ? 0 : -ENOENT;
}

int
wr_dl_load(void)
{
	pthread_once(&fi.once, load);
	return fi.rc;
}

int
wr_fi_getinfo(uint32_t version, const char *node, const char *service,
	      uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	return fi.getinfo(version, node, service, flags, hints, info);
}

void
wr_fi_freeinfo(struct fi_info *info)
{
	if (fi.freeinfo != NULL) {
		fi.freeinfo(info);
	}
}

struct fi_info *
wr_fi_dupinfo(const struct fi_info *info)
{
	return fi.dupinfo(info);
}

int
wr_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	return fi.fabric(attr, fabric, context);
}

const char *
wr_fi_strerror(int errnum)
{
	return fi.strerror != NULL ? fi.strerror(errnum) : "libfabric is not loaded";
}
