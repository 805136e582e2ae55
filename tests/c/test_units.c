/* The C size parser (src/util/units.c) on the cases the Python one is checked with
 * (tests/cases/sizes.tsv), and the collectives' settings parser (src/coll/settings.c):
 * what it accepts, and the one-line errors it gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_check.h"
#include "settings.h"
#include "units.h"

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

static void size_cases(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        failures++;
        return;
    }
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        const char *want = tab + 1;
        long got = 0;
        int rc = ist_parse_size(line, &got);
        char have[32];
        if (rc == 0)
            snprintf(have, sizeof have, "%ld", got);
        else
            snprintf(have, sizeof have, "error");
        if (strcmp(have, want) != 0) {
            printf("FAIL: size '%s': got %s, want %s\n", line, have, want);
            failures++;
        }
        n++;
    }
    fclose(f);
    expect(n >= 20, "the size cases were read");
}

/* parse and expect an error containing `part` (NULL: no error). */
static void settings_case(const char *disable, const char *algorithm, const char *segment,
                          const char *part, struct ist_coll_settings *s)
{
    char err[600] = "";
    int rc = ist_coll_settings_parse(s, disable, algorithm, segment, err, sizeof err);
    char what[800];
    snprintf(what, sizeof what, "settings (%s | %s | %s): rc %d, '%s', want '%s'",
             disable ? disable : "", algorithm ? algorithm : "", segment ? segment : "", rc, err,
             part ? part : "no error");
    expect(part ? rc != 0 && strstr(err, part) != NULL && !strchr(err, '\n') : rc == 0, what);
}

int main(void)
{
    const char *cases = getenv("ISTHMUS_SIZE_CASES");
    size_cases(cases ? cases : "tests/cases/sizes.tsv");

    struct ist_coll_settings s;
    settings_case(NULL, NULL, "16KiB", NULL, &s);
    expect(s.segment[IST_COLL_BCAST] == 16384 && s.segment[IST_COLL_ALLTOALL] == 16384,
           "ISTHMUS_COLL_SEGMENT=16KiB is 16384 bytes for every collective with a segment");
    expect(s.segment[IST_COLL_BARRIER] == 0, "barrier has no segment");
    settings_case(NULL, NULL, "bcast:64KiB, alltoall:8192", NULL, &s);
    expect(s.segment[IST_COLL_BCAST] == 65536 && s.segment[IST_COLL_ALLTOALL] == 8192 &&
               s.segment[IST_COLL_ALLREDUCE] == 0,
           "a segment per collective");
    settings_case("bcast,alltoall", "allreduce:split,gather:linear,scan:native", NULL, NULL, &s);
    expect(s.disabled[IST_COLL_BCAST] && s.disabled[IST_COLL_ALLTOALL] && !s.disabled[IST_COLL_SCAN],
           "disable");
    expect(s.forced[IST_COLL_ALLREDUCE] == IST_ALG_SPLIT && s.forced[IST_COLL_GATHER] == IST_ALG_LINEAR &&
               s.forced[IST_COLL_SCAN] == IST_ALG_NATIVE && s.forced[IST_COLL_BCAST] == IST_ALG_NONE,
           "forced algorithms");
    settings_case(NULL, "gatherv:linear", NULL, NULL, &s);
    expect(s.forced[IST_COLL_GATHERV] == IST_ALG_LINEAR, "a v-form takes its regular form's algorithms");

    settings_case(NULL, NULL, "banana", "ISTHMUS_COLL_SEGMENT: 'banana' is not a positive size", &s);
    settings_case(NULL, NULL, "16Ki", "expected a size such as 16KiB", &s);
    settings_case(NULL, NULL, "0", "not a positive size", &s);
    settings_case(NULL, NULL, "barrier:4KiB", "barrier takes no segment (the collectives with one: bcast,", &s);
    settings_case(NULL, NULL, "bcst:4KiB", "unknown collective 'bcst' (expected one of barrier, bcast,", &s);
    settings_case(NULL, "allreduce:ring", NULL,
                  "ISTHMUS_COLL_ALGORITHM: allreduce: unknown algorithm 'ring' (expected one of native, direct, split)", &s);
    settings_case(NULL, "bcast:linear", NULL, "bcast: unknown algorithm 'linear' (expected one of native, pipelined, sequential, flat)", &s);
    settings_case(NULL, "bcast", NULL, "names no algorithm", &s);
    settings_case("allreduse", NULL, NULL, "ISTHMUS_COLL_DISABLE: unknown collective 'allreduse'", &s);
    static const char *const modes[] = {"native", "isthmus"};
    char err[300] = "";
    expect(ist_coll_choice("ISTHMUS_COLL", "isthmus", modes, 2, err, sizeof err) == 0 &&
               ist_coll_choice("ISTHMUS_COLL", NULL, modes, 2, err, sizeof err) == 0,
           "ISTHMUS_COLL=isthmus, or unset");
    expect(ist_coll_choice("ISTHMUS_COLL", "on", modes, 2, err, sizeof err) != 0 &&
               strcmp(err, "ISTHMUS_COLL: unknown value 'on' (expected one of native, isthmus)") == 0,
           "ISTHMUS_COLL=on: one line naming the accepted values");
    /* the layer's own variables (env_check.c) */
    expect(ist_env_check_values("east:2,west:2", "sleep", "1", err, sizeof err) == 0 &&
               ist_env_check_values(NULL, NULL, NULL, err, sizeof err) == 0,
           "well-formed ISTHMUS_CLUSTERS, ISTHMUS_WAIT, ISTHMUS_ZIP_SITE");
    expect(ist_env_check_values("east:x,west:2", NULL, NULL, err, sizeof err) != 0 &&
               strstr(err, "ISTHMUS_CLUSTERS=east:x,west:2: 'east:x' is not NAME:RANKS") == err,
           "ISTHMUS_CLUSTERS with a count that is no number");
    expect(ist_env_check_values("east:0", NULL, NULL, err, sizeof err) != 0, "a cluster of 0 ranks");
    expect(ist_env_check_values(":2", NULL, NULL, err, sizeof err) != 0, "a cluster without a name");
    expect(ist_env_check_values("east", NULL, NULL, err, sizeof err) != 0, "a cluster without ranks");
    expect(ist_env_check_values(NULL, "nap", NULL, err, sizeof err) != 0 &&
               strcmp(err, "ISTHMUS_WAIT=nap: unknown waiting mode (expected spin or sleep)") == 0,
           "ISTHMUS_WAIT=nap");
    expect(ist_env_check_zip("0,1", "auto", NULL, err, sizeof err) != 0 &&
               strstr(err, "ISTHMUS_CLUSTERS=auto") != NULL,
           "discovery across zipper hosts is refused");
    expect(ist_env_check_zip("0,1", "east:2,west:2", "measure", err, sizeof err) != 0 &&
               strstr(err, "ISTHMUS_PLOGP=measure") != NULL,
           "the P-LogP measurement across zipper hosts is refused");
    expect(ist_env_check_zip(NULL, "auto", "measure", err, sizeof err) == 0 &&
               ist_env_check_zip("0,1", "east:2", "/some/params.json", err, sizeof err) == 0,
           "without zipper hosts, or with a parameters file, nothing is refused");
    expect(ist_env_check_values(NULL, NULL, "-1", err, sizeof err) != 0 &&
               ist_env_check_values(NULL, NULL, "1x", err, sizeof err) != 0,
           "ISTHMUS_ZIP_SITE must be a site number");
    if (failures) return 1;
    printf("units and settings: all passed\n");
    return 0;
}
