// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-turns - turns.h: a target's turn is held by one session at a time,
 * waited for while held, refused with -EBUSY when not given back in time;
 * other targets' turns are free meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler/turns.h"

static uint64_t ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

struct taker {
	struct turns *t;
	atomic_int got;		/* 1: took it, -1: refused */
	uint64_t at;
};

static void *take_42(void *arg)
{
	struct taker *k = arg;
	int ret = turns_take(k->t, 42, 5000);

	k->at = ms_now();
	atomic_store(&k->got, ret ? -1 : 1);
	if (!ret)
		turns_give(k->t, 42);
	return NULL;
}

static void test_waits_for_the_holder(void)
{
	struct turns *t;
	struct taker k = { 0 };
	pthread_t th;
	uint64_t given;

	MUST(turns_new(&t));
	k.t = t;
	CHECK(!turns_take(t, 42, 0), "a free turn");
	CHECK(!turns_take(t, 43, 0), "another target's turn is free");
	pthread_create(&th, NULL, take_42, &k);
	usleep(100000);
	CHECK(!atomic_load(&k.got), "taken while held: %d",
	      atomic_load(&k.got));
	given = ms_now();
	turns_give(t, 42);
	pthread_join(th, NULL);
	CHECK(atomic_load(&k.got) == 1 && k.at >= given,
	      "the waiter takes it once given: %d", atomic_load(&k.got));
	turns_give(t, 43);
	CHECK(!turns_take(t, 42, 0), "given back by the waiter");
	turns_give(t, 42);
	turns_free(t);
}

static void test_refused_in_time(void)
{
	struct turns *t;
	uint64_t t0;
	int ret;

	MUST(turns_new(&t));
	MUST(turns_take(t, 7, 0));
	t0 = ms_now();
	ret = turns_take(t, 7, 200);
	CHECK(ret == -EBUSY, "held past the wait: %d", ret);
	CHECK(ms_now() - t0 >= 190, "waited %llu ms",
	      (unsigned long long)(ms_now() - t0));
	turns_give(t, 7);
	turns_free(t);
}

static void test_no_table(void)
{
	CHECK(!turns_take(NULL, 1, 0) && !turns_take(NULL, 1, 0),
	      "no table: every turn free");
	turns_give(NULL, 1);
	turns_free(NULL);
}

int main(void)
{
	test_waits_for_the_holder();
	test_refused_in_time();
	test_no_table();
	return failures ? 1 : 0;
}
