/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * elfscn.h - an ELF section by name: the one walk of the section headers
 * that the DSO reader (dso.c, dso_dwarf.c) and the Go table reader
 * (gopclntab.c, which sits below dso.c) share. Header-only: both link
 * without each other.
 */
#ifndef PROFFS_ELFSCN_H
#define PROFFS_ELFSCN_H

#include <gelf.h>
#include <string.h>

/* The first section called name, its header in *shdr; NULL if none. */
static inline Elf_Scn *elf_section_named(Elf *elf, const char *name,
					 GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	const char *s;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, shdr) &&
		    (s = elf_strptr(elf, shstrndx, shdr->sh_name)) &&
		    !strcmp(s, name))
			return scn;
	return NULL;
}

#endif
