/* Rust v0 demangling (src/session/sym_rust_v0.c, through sym_demangle): exact names
 * for paths, generics, closures, impls, trait impls, back-references, types and
 * consts.  The expected strings are GNU c++filt 2.40's demanglings of the same
 * symbols (`c++filt _R...`) in rustc-demangle's short form, which xptrace prints: the
 * crate disambiguators ([3c1c0]) and the types of const generics (": usize") left
 * out. */
#include "xp_test.h"

#include "session/sym.h"

struct rv0 {
	const char *mangled, *want;
};

static const struct rv0 cases[] = {
	/* paths: crate root, nested modules */
	{ "_RNvCs1234_7mycrate3foo", "mycrate::foo" },
	{ "_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar" },
	/* generics, with back-references (B2_, B4_) to the crate */
	{ "_RINvCs1234_7mycrate3fooNtB2_3BarlE", "mycrate::foo::<mycrate::Bar, i32>" },
	{ "_RINvCs1234_7mycrate3fooNtNtB2_3bar3BazE", "mycrate::foo::<mycrate::bar::Baz>" },
	/* generic arguments take the turbofish (::<) in value paths only, not in types */
	{ "_RINvNtCs1stBYn7ls4v_4core3ptr13drop_in_placeINtNtCsfDDUSDq1Ryt_5alloc3vec3VechEEB4_",
	  "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>" },
	{ "_RNvMNtCs4VmZ1Wkwn2o_5alloc3vecINtB2_3VecpE4push", "<alloc::vec::Vec<_>>::push" },
	{ "_RNvMCs1234_7mycrateINtB2_3FoohE3new", "<mycrate::Foo<u8>>::new" },
	{ "_RINvCs1234_7mycrate3fooINtB2_3BarINtB2_3BazhEEE", "mycrate::foo::<mycrate::Bar<mycrate::Baz<u8>>>" },
	{ "_RINvCs1234_7mycrate3fooRINtB2_3BarmEE", "mycrate::foo::<&mycrate::Bar<u32>>" },
	{ "_RNvYINtCs1234_7mycrate3FoohEINtB5_5TraitmE3bar", "<mycrate::Foo<u8> as mycrate::Trait<u32>>::bar" },
	/* after the path: the instantiating crate (not shown), a vendor suffix after '.'
	 * or '$' (not shown; c++filt refuses the '$' one, which the v0 grammar allows) */
	{ "_RINvNtCs1stBYn7ls4v_4core3ptr13drop_in_placeINtNtCsfDDUSDq1Ryt_5alloc3vec3VechEECs1234_7mycrate",
	  "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>" },
	{ "_RINvNtCs1stBYn7ls4v_4core3ptr13drop_in_placeINtNtCsfDDUSDq1Ryt_5alloc3vec3VechEEB4_.llvm.42",
	  "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>" },
	{ "_RNvCs1234_7mycrate3foo.llvm.123", "mycrate::foo" },
	{ "_RNvCs1234_7mycrate3foo.cold", "mycrate::foo" },
	{ "_RNvCs1234_7mycrate3foo$x", "mycrate::foo" },
	/* closures: {closure#N}, N from the disambiguator (s0_ = 2) */
	{ "_RNCNvCsbmNqQUJIY6D_4core5panic0", "core::panic::{closure#0}" },
	{ "_RNCNvCs1234_7mycrate4main0", "mycrate::main::{closure#0}" },
	{ "_RNCNvCs1234_7mycrate3foos0_0", "mycrate::foo::{closure#2}" },
	/* nested closures: each "0" is one empty name ("00" is not a number) */
	{ "_RNCNCNvCs1234_7mycrate3foo00", "mycrate::foo::{closure#0}::{closure#0}" },
	{ "_RNCNCNvCs1234_7mycrate3foos_00", "mycrate::foo::{closure#1}::{closure#0}" },
	{ "_RNCNCNvCs1234_7mycrate3foos_0s0_0", "mycrate::foo::{closure#1}::{closure#2}" },
	{ "_RNCNCNCNvCs1234_7mycrate4main000", "mycrate::main::{closure#0}::{closure#0}::{closure#0}" },
	{ "_RNvNCNvCs1234_7mycrate3foo03bar", "mycrate::foo::{closure#0}::bar" },
	/* other namespaces: named ones, shims, a letter with no name yet */
	{ "_RNCNvCs1234_7mycrate3foo3bar", "mycrate::foo::{closure:bar#0}" },
	{ "_RNSNvCs1234_7mycrate3foo6vtable", "mycrate::foo::{shim:vtable#0}" },
	{ "_RNANvCs1234_7mycrate3foo0", "mycrate::foo::{A#0}" },
	/* inherent impl, trait impl, trait definition */
	{ "_RNvXs_Cs1234_7mycrateNtB4_3FooNtNtCs2_4core3fmt7Display3fmt", "<mycrate::Foo as core::fmt::Display>::fmt" },
	{ "_RNvYNtCs1234_7mycrate3FooNtB4_5Trait6method", "<mycrate::Foo as mycrate::Trait>::method" },
	/* types: references, pointers, slices, arrays, tuples, fn pointers, dyn */
	{ "_RINvCs1234_7mycrate3fooTRhQmEE", "mycrate::foo::<(&u8, &mut u32)>" },
	{ "_RINvCs1234_7mycrate3fooPhOmSaE", "mycrate::foo::<*const u8, *mut u32, [i8]>" },
	{ "_RINvCs1234_7mycrate3fooAhj3_E", "mycrate::foo::<[u8; 3]>" },
	{ "_RINvCs1234_7mycrate3fooFhEmE", "mycrate::foo::<fn(u8) -> u32>" },
	{ "_RINvCs1234_7mycrate3fooDNtCs1_4core3AnyEL_E", "mycrate::foo::<dyn core::Any>" },
	/* one-element tuples keep their comma */
	{ "_RINvCs1234_7mycrate3fooTRQmEE", "mycrate::foo::<(&&mut u32,)>" },
	{ "_RINvCs1234_7mycrate3fooTTTEEEE", "mycrate::foo::<(((),),)>" },
	/* an identifier starting with '_' or a digit, after the '_' separator */
	{ "_RNvCs1234_7mycrate4__foo", "mycrate::_foo" },
	/* fn ABIs ('_' in the name is '-') */
	{ "_RINvCs1234_7mycrate3fooFKCEuE", "mycrate::foo::<extern \"C\" fn()>" },
	{ "_RINvCs1234_7mycrate3fooFUK9rust_callhEuE", "mycrate::foo::<unsafe extern \"rust-call\" fn(u8)>" },
	/* dyn traits' associated types, in the trait's generic arguments, through a
	 * back-reference too */
	{ "_RINvCs1234_7mycrate3fooDNtNtNtCs1_4core4iter6traits8Iteratorp4ItemhEL_E",
	  "mycrate::foo::<dyn core::iter::traits::Iterator<Item = u8>>" },
	{ "_RINvCs1234_7mycrate3fooDINtCs1_4core3FoomEp4Itemhp5OtherINtBp_3BarhEEL_E",
	  "mycrate::foo::<dyn core::Foo<u32, Item = u8, Other = core::Bar<u8>>>" },
	{ "_RINvCs1234_7mycrate3fooDINtCs1_4core3FooINtBp_3BarDNtBp_3Bazp1AhEL_EEp1BmEL_E",
	  "mycrate::foo::<dyn core::Foo<core::Bar<dyn core::Baz<A = u8>>, B = u32>>" },
	{ "_RINvCs1234_7mycrate3fooTDINtCs1_4core3FoohEp1AhEL_DBn_p1BmEL_EE",
	  "mycrate::foo::<(dyn core::Foo<u8, A = u8>, dyn core::Foo<u8, B = u32>)>" },
	/* lifetimes: erased ('_, or not shown on a reference), or bound by for<...> */
	{ "_RINvCs1234_7mycrate3fooRL_hL_E", "mycrate::foo::<&u8, '_>" },
	{ "_RINvCs1234_7mycrate3fooFG_RL0_hEuE", "mycrate::foo::<for<'a> fn(&'a u8)>" },
	{ "_RINvCs1234_7mycrate3fooFG0_RL1_hQL0_mEuE", "mycrate::foo::<for<'a, 'b> fn(&'a u8, &'b mut u32)>" },
	{ "_RINvCs1234_7mycrate3fooFG_FG_RL1_hRL0_mEuEuE",
	  "mycrate::foo::<for<'a> fn(for<'b> fn(&'a u8, &'b u32))>" },
	{ "_RINvCs1234_7mycrate3fooFG_RL0_hERL0_hE", "mycrate::foo::<for<'a> fn(&'a u8) -> &'a u8>" },
	{ "_RINvCs1234_7mycrate3fooDG_NtCs1_4core3AnyEL_E", "mycrate::foo::<dyn for<'a> core::Any>" },
	/* const generics */
	{ "_RINvCs1234_7mycrate3fooKj10_E", "mycrate::foo::<16>" },
	{ "_RINvCs1234_7mycrate3fooKj0_E", "mycrate::foo::<0>" },
	{ "_RINvCs1234_7mycrate3fooKjffffffffffffffff_E", "mycrate::foo::<18446744073709551615>" },
	{ "_RINvCs1234_7mycrate3fooKb1_E", "mycrate::foo::<true>" },
	{ "_RINvCs1234_7mycrate3fooKb0_E", "mycrate::foo::<false>" },
	{ "_RINvCs1234_7mycrate3fooKb1_KBm_E", "mycrate::foo::<true, true>" },
	{ "_RINvCs1234_7mycrate3fooKlna_E", "mycrate::foo::<-10>" },
	{ "_RINvCs1234_7mycrate3fooKsn7fff_E", "mycrate::foo::<-32767>" },
	{ "_RINvCs1234_7mycrate3fooKxn8000000000000000_E", "mycrate::foo::<-9223372036854775808>" },
	{ "_RINvCs1234_7mycrate3fooKc61_E", "mycrate::foo::<'a'>" },
	{ "_RINvCs1234_7mycrate3fooKc22_E", "mycrate::foo::<'\"'>" },
	{ "_RINvCs1234_7mycrate3fooKca_E", "mycrate::foo::<'\\n'>" },
	{ "_RINvCs1234_7mycrate3fooKc9_E", "mycrate::foo::<'\\t'>" },
	{ "_RINvCs1234_7mycrate3fooKc0_E", "mycrate::foo::<'\\u{0}'>" },
	{ "_RINvCs1234_7mycrate3fooKc1f600_E", "mycrate::foo::<'\\u{1f600}'>" },
	/* not c++filt's: it writes ''' and '\' for these, and '\u{20}' for a space; these
	 * are Rust's char literals, as rustc-demangle writes them */
	{ "_RINvCs1234_7mycrate3fooKc27_E", "mycrate::foo::<'\\''>" },
	{ "_RINvCs1234_7mycrate3fooKc5c_E", "mycrate::foo::<'\\\\'>" },
	{ "_RINvCs1234_7mycrate3fooKc20_E", "mycrate::foo::<' '>" },
	/* past 64 bits: the hex digits, as rustc-demangle (c++filt 2.40 prints them wrong) */
	{ "_RINvCs1234_7mycrate3fooKo10000000000000000_E", "mycrate::foo::<0x10000000000000000>" },
};

static void test_demangle(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sym_demangle(cases[i].mangled, false);
		if (!d || strcmp(d, cases[i].want) != 0) {
			print_error("%s: got %s, want %s\n", cases[i].mangled, d ? d : "NULL", cases[i].want);
			bad++;
		}
		free(d);
	}
	assert_int_equal(bad, 0);
}

/* Outside the grammar (c++filt leaves these as they are too): not demangled. */
static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"_RNvCs1234_7mycrate4bar",		/* identifier longer than the name */
		"_RNvNvCs1234_7mycrate3fooB4_3bar",	/* back-reference to itself */
		"_RN1NvCs1234_7mycrate3foo3bar",	/* namespace not a letter */
		"_RINvCs1234_7mycrate3fooKjna_E",	/* negative unsigned const */
		"_RINvCs1234_7mycrate3fooKb2_E",	/* bool neither 0 nor 1 */
		"_RINvCs1234_7mycrate3fooKbn1_E",
		"_RINvCs1234_7mycrate3fooKu_E",		/* const of a type with no value encoding */
		"_RINvCs1234_7mycrate3fooKeE",		/* str const: newer than c++filt 2.40 */
		"_RINvCs1234_7mycrate3fooKjA_E",	/* not a hex digit */
		"_RINvCs1234_7mycrate3fooKcd800_E",	/* no char: a surrogate (c++filt prints it) */
		"_RINvCs1234_7mycrate3fooKc110000_E",	/* no char: past U+10FFFF (same) */
		"_RNvCs1234_7mycrate3fooXYZ",		/* trailing garbage */
		"_RNvCs1234_7mycrate3foo3bar",
		"_RNvCs1234_7mycrate3foo_",
		"_RNvNvCs1234_7mycrate3foo03bar",
		"_RINvNtCs1stBYn7ls4v_4core3ptr13drop_in_placeINtNtCsfDDUSDq1Ryt_5alloc3vec3VechEEB4_B4_",
		"_R0NvCs1234_7mycrate3foo",		/* an encoding version: not the v0 we know */
		"_RINvCs1234_7mycrate3fooL0_E",		/* lifetime bound by no for<> (c++filt prints */
		"_RINvCs1234_7mycrate3fooDNtCs1_4core3AnyEL0_E",	/* '_18446744073709551615) */
		"_RINvCs1234_7mycrate3fooFG_RL1_hEuE",
		"_RINvCs1234_7mycrate3fooFKu1CEuE",	/* punycode ABI */
		"_RINvCs1234_7mycrate3fooKj_E",		/* const with no digits (rustc writes 0_) */
		"_RINvCs1234_7mycrate3fooKb_E",
		"_RNvCs1234_7mycrate8foo.llvm.123",	/* identifier running into the suffix */
		"_RNvCs1234_7my-rate3foo",		/* not an identifier byte */
		"_RZZZ",
		"_R",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *d = sym_demangle(bad[i], false);
		if (d)
			print_error("%s: demangled to %s\n", bad[i], d);
		assert_null(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
