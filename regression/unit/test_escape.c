/* Strings from job and data files reach the terminal only escaped
 * (cairn_escape in error.h): control bytes, C1 controls and invalid UTF-8
 * as \xNN, valid UTF-8 as it is, through every message path. */
#include "unit.h"

static const char *esc(const char *s)
{
    static char out[256];
    cairn_escape(out, sizeof out, s);
    return out;
}

static void plain_text_passes(void **state)
{
    (void)state;
    assert_string_equal(esc("activation 'relu' \\ ok"), "activation 'relu' \\ ok");
    assert_string_equal(esc(""), "");
}

static void controls_are_escaped(void **state)
{
    (void)state;
    assert_string_equal(esc("\x1b[31mred"), "\\x1b[31mred");
    assert_string_equal(esc("a\nb\tc\rd\x7f"), "a\\x0ab\\x09c\\x0dd\\x7f");
    assert_string_equal(esc("\x01"), "\\x01");
}

static void utf8_passes_invalid_escaped(void **state)
{
    (void)state;
    /* é, €, 𝄞: two, three and four bytes */
    assert_string_equal(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
    assert_string_equal(esc("\xff\xfe"), "\\xff\\xfe");
    assert_string_equal(esc("\xc3"), "\\xc3");                 /* cut short at the end */
    assert_string_equal(esc("\xc3(x"), "\\xc3(x");             /* a lead without its continuation */
    assert_string_equal(esc("\xc0\xaf"), "\\xc0\\xaf");        /* overlong '/' */
    assert_string_equal(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
    assert_string_equal(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    assert_string_equal(esc("\xc2\x9b" "31m"), "\\xc2\\x9b" "31m"); /* C1 CSI: a terminal escape */
}

static void idempotent_and_truncated_whole(void **state)
{
    (void)state;
    char once[64], twice[64], small[6];
    cairn_escape(once, sizeof once, "x\x1b\xff\xc3\xa9");
    cairn_escape(twice, sizeof twice, once);
    assert_string_equal(once, twice);
    assert_int_equal(cairn_escape(small, sizeof small, "ab\x1b"), 2); /* \x1b does not fit whole */
    assert_string_equal(small, "ab");
    assert_int_equal(cairn_escape(small, sizeof small, "a\xe2\x82\xac\xe2\x82\xac"), 4);
    assert_string_equal(small, "a\xe2\x82\xac");
}

static void every_message_path_escapes(void **state)
{
    (void)state;
    cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "activation '%s'", "\x1b[2J");
    assert_string_equal(cairn_errmsg(), "activation '\\x1b[2J'");
    cairn_err_wrap(CAIRN_EINPUT, "in %s: ", "f\x07.h5");
    assert_string_equal(cairn_errmsg(), "in f\\x07.h5: activation '\\x1b[2J'");
    struct diags d = {0};
    diags_add(&d, "j\x1b.cfg", 3, "not \"%s\"", "\x9b" "1m");
    assert_int_equal(d.n, 1);
    assert_string_equal(d.v[0].file, "j\\x1b.cfg");
    assert_string_equal(d.v[0].msg, "not \"\\x9b1m\"");
    diags_free(&d);
    cairn_err_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_text_passes),
        cmocka_unit_test(controls_are_escaped),
        cmocka_unit_test(utf8_passes_invalid_escaped),
        cmocka_unit_test(idempotent_and_truncated_whole),
        cmocka_unit_test(every_message_path_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
