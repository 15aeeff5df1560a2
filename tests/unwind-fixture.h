/* SPDX-License-Identifier: GPL-2.0-or-later */
/* unwind-fixture.h - fixture_outer() calls fixture_inner(), which calls
 * cb: frames with .debug_frame CFI only (unwind-fixture.c). */
#ifndef PROFFS_UNWIND_FIXTURE_H
#define PROFFS_UNWIND_FIXTURE_H

void fixture_inner(void (*cb)(void));
void fixture_outer(void (*cb)(void));

#endif
