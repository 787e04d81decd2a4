/* SPDX-License-Identifier: MIT */
#include "mpilib.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

/* The libraries of MPI implementations and of their launchers' wire. */
static bool
is_mpi(const char *lib)
{
	static const char *const prefixes[] = { "libmpi.", "libmpi_", "libmpich.", "libmpicxx.",
						"libpmi.", "libpmi2.", "libpmix." };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(lib, prefixes[i], strlen(prefixes[i])) == 0) {
			return true;
		}
	}
	return false;
}

/* The needed entries of one dynamic section. */
static bool
scan_dynamic(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, char *name, size_t size)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize > 0 ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data != NULL && i < n; i++) {
		GElf_Dyn dyn;
		const char *lib;

		if (gelf_getdyn(data, (int)i, &dyn) == NULL || dyn.d_tag != DT_NEEDED) {
			continue;
		}
		lib = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
		if (lib != NULL && is_mpi(lib)) {
			snprintf(name, size, "%s", lib);
			return true;
		}
	}
	return false;
}

bool
wr_mpilib_linked(const char *path, char *name, size_t size)
{
	int fd = path != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	Elf *elf = NULL;
	bool found = false;

	if (fd >= 0 && elf_version(EV_CURRENT) != EV_NONE) {
		elf = elf_begin(fd, ELF_C_READ, NULL);
	}
	for (Elf_Scn *scn = elf != NULL ? elf_nextscn(elf, NULL) : NULL; scn != NULL && !found;
	     scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_DYNAMIC) {
			found = scan_dynamic(elf, scn, &sh, name, size);
		}
	}
	elf_end(elf);
	if (fd >= 0) {
		close(fd);
	}
	return found;
}
