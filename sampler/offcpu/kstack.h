/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kstack.h - the kernel frames of a sleeping thread, from the text of
 * /proc/PID/task/TID/stack (which only root may read: the kernel
 * symbolizes it itself, so no /proc/kallsyms is needed).
 *
 * Kept apart from the sampling so that a module that symbolizes kernel
 * addresses for every kind can take its place. Pure function, no
 * allocation.
 */
#ifndef PROFFS_KSTACK_H
#define PROFFS_KSTACK_H

/*
 * Parse text in place: each line "[<0>] do_select+0x65c/0x940" gives
 * "do_select". Up to max names, innermost first, pointing into text;
 * returns how many. Lines that do not parse are skipped.
 */
int kstack_names(char *text, const char **names, int max);

#endif
