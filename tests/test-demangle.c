// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-demangle.c - names as perf and rustfilt print them: Rust legacy
 * names with their hash dropped and their $-escapes decoded, Rust v0, C++
 * without parameter lists, and what is not a mangled name left alone.
 * The Rust names are those of tests/targets/shapes.rs, as nm lists them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler/unwind/demangle.h"

static const struct {
	const char *mangled, *want;
} cases[] = {
	/* Rust, legacy mangling (rustc's default up to 1.x) */
	{ "_ZN6shapes8geometry9leaf_work17hfe9795345b84324fE",
	  "shapes::geometry::leaf_work" },
	{ "_ZN68_$LT$shapes..geometry..Square$u20$as$u20$shapes..geometry.."
	  "Shape$GT$4area17h40662c93613ebffbE",
	  "<shapes::geometry::Square as shapes::geometry::Shape>::area" },
	{ "_ZN6shapes8geometry15Holder$LT$T$GT$3run17h8447c96b7f7fd864E",
	  "shapes::geometry::Holder<T>::run" },
	{ "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$"
	  "$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h2b1ff3e3f5ea6c2aE",
	  "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>" },
	/* LLVM's suffix of a promoted local */
	{ "_ZN4core7unicode12unicode_data15grapheme_extend17SHORT_OFFSET_RUNS"
	  "17h3ade8c70293bf5e9E.llvm.16943950094299124775",
	  "core::unicode::unicode_data::grapheme_extend::SHORT_OFFSET_RUNS" },
	/* Rust, v0 mangling (-C symbol-mangling-version=v0) */
	{ "_RNvNtCshMl02qSqLVO_6shapes8geometry9leaf_work",
	  "shapes::geometry::leaf_work" },
	{ "_RNvXNtCshMl02qSqLVO_6shapes8geometryNtB2_6SquareNtB2_5Shape4area",
	  "<shapes::geometry::Square as shapes::geometry::Shape>::area" },
	{ "_RNvMs0_NtCshMl02qSqLVO_6shapes8geometryINtB5_6HolderNtB5_4CircE3"
	  "runB7_",
	  "<shapes::geometry::Holder<shapes::geometry::Circ>>::run" },
	/* C++: no parameter list, templates and qualifiers kept */
	{ "_ZN2ns6fx_cxxEi", "ns::fx_cxx" },
	{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
	  "std::vector<int, std::allocator<int> >::push_back" },
	{ "_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()" },
	{ "_ZN3foo3barE", "foo::bar" },
};

static const char *const not_mangled[] = {
	"main", "", "_", "_Z", "_Zfoo", "_ZN3foo", "_R", "_RNv", "$x", "_start",
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		int ret = demangle(cases[i].mangled, &out);

		CHECK(!ret && out && !strcmp(out, cases[i].want),
		      "%s: %d %s, want %s", cases[i].mangled, ret,
		      out ? out : "(null)", cases[i].want);
		free(out);
	}
}

static void test_not_mangled(void)
{
	for (size_t i = 0; i < sizeof(not_mangled) / sizeof(*not_mangled);
	     i++) {
		char *out = NULL;
		int ret = demangle(not_mangled[i], &out);

		CHECK(ret == -EINVAL && !out, "%s: %d %s", not_mangled[i], ret,
		      out ? out : "");
		free(out);
	}
}

/* "_ZN2ns<len><len a's>Ev", namespace ns's function aaa...a(): its
 * length for an identifier of len characters. */
static size_t long_name(char *buf, size_t len)
{
	int n = sprintf(buf, "_ZN2ns%zu", len);

	memset(buf + n, 'a', len);
	strcpy(buf + n + len, "Ev");
	return n + len + 2;
}

/* A name of DEMANGLE_MAX characters is demangled (libiberty alone stops
 * at 1,024); one past it is left alone. */
static void test_long(void)
{
	static char name[DEMANGLE_MAX + 64];
	size_t id = DEMANGLE_MAX - 12;
	char *out = NULL;

	CHECK(long_name(name, id) == DEMANGLE_MAX, "%zu", strlen(name));
	CHECK(!demangle(name, &out) && out && strlen(out) == 4 + id &&
	      !strncmp(out, "ns::aaa", 7), "name at the limit: %.20s",
	      out ? out : "(null)");
	free(out);
	out = NULL;
	CHECK(long_name(name, id + 1) == DEMANGLE_MAX + 1, "%zu",
	      strlen(name));
	CHECK(demangle(name, &out) == -EINVAL && !out, "long name");
	free(out);
}

int main(void)
{
	test_cases();
	test_not_mangled();
	test_long();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all demangle checks passed\n");
	return 0;
}
