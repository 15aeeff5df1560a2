/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * index.h - /prof/<pid>/index.html: the command line and links to the
 * common profiles, for a browser pointed at file:///prof/<pid>/.
 *
 * Only names the daemon serves are linked (output_supported()).
 * On success *buf is malloc()ed and owned by the caller. -ENOENT when the
 * process is gone, -ENOMEM.
 */
#ifndef PROFFS_INDEX_H
#define PROFFS_INDEX_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

int index_html(pid_t pid, char **buf, size_t *len);

/* Write s into f as HTML text (<, >, &, " escaped). */
void index_put_html(FILE *f, const char *s);

#endif
