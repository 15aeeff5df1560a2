// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_throttle.c - the heap agent's sampling rate, made coarser while a
 * process samples too often (why: heap_throttle.h). */
#include "sampler/heap/heap_throttle.h"

#include "sampler/heap/agent/heap_ring.h"	/* PH_DEFAULT_RATE */

void heap_throttle_start(struct heap_throttle *t, uint64_t now_ns,
			 uint64_t samples)
{
	t->since_ns = now_ns;
	t->samples0 = samples;
	t->factor = 1;
	t->calm = 0;
}

/* The smallest power of two f with per_s / f <= the cap. */
static uint32_t over_by(uint64_t per_s)
{
	uint32_t f = 1;

	while (f < HEAP_THROTTLE_MAX && per_s > HEAP_THROTTLE_PER_S * f)
		f *= 2;
	return f;
}

bool heap_throttle_update(struct heap_throttle *t, uint64_t now_ns,
			  uint64_t samples)
{
	uint64_t span = now_ns - t->since_ns, per_s;
	uint32_t was = t->factor, f;

	if (samples < t->samples0 || now_ns < t->since_ns) {
		t->since_ns = now_ns;
		t->samples0 = samples;
		return false;
	}
	if (span < HEAP_THROTTLE_PERIOD_NS)
		return false;
	per_s = (samples - t->samples0) * 1000000000ull / span;
	t->since_ns = now_ns;
	t->samples0 = samples;
	f = over_by(per_s);
	if (f > 1) {
		/* The rate at which these samples were drawn, times f. */
		t->factor = (uint64_t)t->factor * f > HEAP_THROTTLE_MAX ?
			    HEAP_THROTTLE_MAX : t->factor * f;
		t->calm = 0;
		if (t->factor != was)
			t->raises++;
	} else if (per_s * 4 < HEAP_THROTTLE_PER_S && t->factor > 1) {
		if (++t->calm >= HEAP_THROTTLE_CALM) {
			t->factor /= 2;
			t->calm = 0;
		}
	} else {
		t->calm = 0;
	}
	return t->factor != was;
}

uint64_t heap_throttle_session_rate(uint64_t rate, bool named)
{
	if (!named && rate == PH_DEFAULT_RATE)
		return 0;
	return rate ? rate : 1;
}

uint64_t heap_throttle_asked(const uint64_t *rates, unsigned n,
			     bool *named)
{
	uint64_t asked = n ? UINT64_MAX : PH_DEFAULT_RATE;

	*named = false;
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = rates[i] ? rates[i] : PH_DEFAULT_RATE;

		*named |= rates[i] != 0;
		if (r < asked)
			asked = r;
	}
	return asked;
}
