#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/directive.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Parses text into a fresh vector and compares it with want (NULL-terminated). */
static void check(const char *text, int want_lines, const char *const *want) {
        char **argv = NULL;
        int argc = 0, line = -1, n = 0;

        int r = gw_directives_parse(text, &argv, &argc, &line);
        assert_int_equal(r, want_lines);
        assert_int_equal(line, -1);
        while (want[n])
                n++;
        assert_int_equal(argc, n);
        assert_non_null(argv);
        for (int i = 0; i < n; i++)
                assert_string_equal(argv[i], want[i]);
        assert_null(argv[n]);
        gw_strv_free(argv);
}

static void shebang_then_directives(void **state) {
        check("#!/bin/bash\n"
              "#GPUWARD --gpus 2 --time 4h\n"
              "#GPUWARD --gpu-mem 20G\n"
              "python train.py\n",
              2, (const char *const[]){ "--gpus", "2", "--time", "4h", "--gpu-mem", "20G", NULL });
}

static void stops_at_first_code_line(void **state) {
        check("#!/bin/sh\n"
              "#GPUWARD --gpus 1\n"
              "echo hi\n"
              "#GPUWARD --gpus 8\n",
              1, (const char *const[]){ "--gpus", "1", NULL });
        /* A code line first: nothing is read, even an unterminated quote further down. */
        check("set -e\n#GPUWARD --gpus 1\n#GPUWARD 'oops\n", 0, (const char *const[]){ NULL });
}

static void blanks_and_comments(void **state) {
        check("#!/usr/bin/env bash\n"
              "\n"
              "# a comment\n"
              "   \t\n"
              "#GPUWARD --gpus 1\n"
              "## another # comment\n"
              "#SBATCH --gres=gpu:1\n"
              "#GPUWARDX --not-ours\n"
              "  #GPUWARD --name indented\n"
              "\r\n"
              "#GPUWARD\t--time\t1h\r\n"
              "#GPUWARD\n"
              "#GPUWARD --gpus 2  # trailing comment\n"
              "exec python train.py\n",
              5, (const char *const[]){ "--gpus", "1", "--name", "indented", "--time", "1h", "--gpus", "2", NULL });
}

static void quotes(void **state) {
        check("#GPUWARD --name \"my job\" --comment 'a \"quoted\" word'\n"
              "#GPUWARD --env 'K=a b' --env K2=\"x y\"z '' \"\"\n"
              "#GPUWARD \"say \\\"hi\\\"\" 'it\\s' back\\ slash \"#not-comment\" x#y\n",
              3,
              (const char *const[]){ "--name", "my job", "--comment", "a \"quoted\" word", "--env", "K=a b", "--env",
                                     "K2=x yz", "", "", "say \"hi\"", "it\\s", "back slash", "#not-comment", "x#y",
                                     NULL });
}

static void no_trailing_newline(void **state) {
        check("#GPUWARD --gpus 3", 1, (const char *const[]){ "--gpus", "3", NULL });
        check("", 0, (const char *const[]){ NULL });
        check("\n\n", 0, (const char *const[]){ NULL });
}

static void unterminated_quote(void **state) {
        static const struct {
                const char *text;
                int line;
        } cases[] = {
                { "#GPUWARD --name 'oops\n", 1 },
                { "#!/bin/sh\n#GPUWARD --gpus 1\n\n#GPUWARD --name \"oops\necho\n", 4 },
                { "#!/bin/sh\n#GPUWARD --name \"a\\\"\n", 2 },
                { "# c\n#GPUWARD --name 'x", 2 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                char **argv = NULL;
                int argc = 0, line = 0;
                assert_int_equal(gw_directives_parse(cases[i].text, &argv, &argc, &line), -EINVAL);
                assert_int_equal(line, cases[i].line);
                assert_null(argv);
                assert_int_equal(argc, 0);
        }
}

static void appends_to_existing(void **state) {
        char **argv = calloc(3, sizeof(char *));
        int argc = 2, line = 0;

        assert_non_null(argv);
        argv[0] = strdup("gpuward");
        argv[1] = strdup("submit");
        assert_int_equal(gw_directives_parse("#GPUWARD --gpus 2\n", &argv, &argc, &line), 1);
        assert_int_equal(argc, 4);
        assert_string_equal(argv[0], "gpuward");
        assert_string_equal(argv[1], "submit");
        assert_string_equal(argv[2], "--gpus");
        assert_string_equal(argv[3], "2");
        assert_null(argv[4]);

        /* On error the caller's vector is left as it was. */
        assert_int_equal(gw_directives_parse("#GPUWARD --x 'y\n", &argv, &argc, &line), -EINVAL);
        assert_int_equal(argc, 4);
        assert_null(argv[4]);
        gw_strv_free(argv);
}

static void too_many_words(void **state) {
        char text[4096], *p = text;
        char **argv = NULL;
        int argc = 0, line = 0;

        /* 256 words fit, the 257th does not. */
        p += snprintf(p, sizeof(text), "#!/bin/sh\n");
        for (int l = 0; l < 16; l++) {
                p += snprintf(p, sizeof(text) - (size_t) (p - text), "#GPUWARD");
                for (int w = 0; w < 16; w++)
                        p += snprintf(p, sizeof(text) - (size_t) (p - text), " w");
                p += snprintf(p, sizeof(text) - (size_t) (p - text), "\n");
        }
        assert_int_equal(gw_directives_parse(text, &argv, &argc, &line), 16);
        assert_int_equal(argc, 256);
        gw_strv_free(argv);

        argv = NULL;
        argc = 0;
        (void) snprintf(p, sizeof(text) - (size_t) (p - text), "#GPUWARD one-more\n");
        assert_int_equal(gw_directives_parse(text, &argv, &argc, &line), -E2BIG);
        assert_int_equal(line, 18);
        assert_null(argv);
}

/* A sweep's spec passes through whole: '%', ':' and ',' are not special, and a '#' only
 * starts a comment at the start of a word. */
static void array_spec(void **state) {
        check("#!/bin/sh\n"
              "#GPUWARD --array 0-99:10%8 --gpus 1\n"
              "#GPUWARD --array=1,3,5-9  # odd tasks\n"
              "python sweep.py\n",
              2, (const char *const[]){ "--array", "0-99:10%8", "--gpus", "1", "--array=1,3,5-9", NULL });
}

static void bad_args(void **state) {
        char **argv = NULL;
        int argc = 0;
        assert_int_equal(gw_directives_parse(NULL, &argv, &argc, NULL), -EINVAL);
        assert_int_equal(gw_directives_parse("", NULL, &argc, NULL), -EINVAL);
        assert_int_equal(gw_directives_parse("", &argv, NULL, NULL), -EINVAL);
        gw_strv_free(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(shebang_then_directives),
                cmocka_unit_test(stops_at_first_code_line),
                cmocka_unit_test(blanks_and_comments),
                cmocka_unit_test(quotes),
                cmocka_unit_test(no_trailing_newline),
                cmocka_unit_test(unterminated_quote),
                cmocka_unit_test(appends_to_existing),
                cmocka_unit_test(too_many_words),
                cmocka_unit_test(bad_args),
                cmocka_unit_test(array_spec),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
