/* The size parser (units.h). Its grammar is units.py's regular expression, written out:
 * strtod alone would also take signs, "inf", "nan" and hexadecimal. */
#include "units.h"

#include <ctype.h>
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The length of a number [0-9]*.?[0-9]+([eE][-+]?[0-9]+)? at p, or 0. */
static size_t number_length(const char *p)
{
    size_t i = 0, before = 0, after = 0;
    while (isdigit((unsigned char)p[i])) i++, before++;
    if (p[i] == '.') {
        size_t dot = i++;
        while (isdigit((unsigned char)p[i])) i++, after++;
        if (after == 0) i = dot; /* "5." is a number and a unit "." */
    }
    if (before == 0 && after == 0) return 0;
    if (p[i] == 'e' || p[i] == 'E') {
        size_t j = i + 1;
        if (p[j] == '+' || p[j] == '-') j++;
        if (isdigit((unsigned char)p[j])) {
            while (isdigit((unsigned char)p[j])) j++;
            i = j;
        }
    }
    return i;
}

/* The factor of a unit: "", "B", "byte(s)", or a prefix and one of those. */
static double unit_factor(const char *u, size_t len)
{
    double factor = 1;
    size_t i = 0;
    const char *prefixes = "kKMGT";
    const char *at = len ? strchr(prefixes, u[0]) : NULL;
    if (at && u[0]) {
        static const double decimal[] = {1e3, 1e3, 1e6, 1e9, 1e12};
        int k = (int)(at - prefixes);
        i = 1;
        if (i < len && u[i] == 'i') {
            factor = ldexp(1.0, 10 * (k < 2 ? 1 : k));
            i++;
        } else {
            factor = decimal[k];
        }
    }
    const char *base = u + i;
    size_t blen = len - i;
    int plain = blen == 0, b = blen == 1 && base[0] == 'B';
    int byte = (blen == 4 && strncmp(base, "byte", 4) == 0) ||
               (blen == 5 && strncmp(base, "bytes", 5) == 0);
    if (plain && i == 0) return 1;
    if (b || byte) return factor;
    return -1; /* a prefix without its B, or an unknown unit */
}

int ist_parse_size(const char *text, long *bytes)
{
    if (!text) return -1;
    while (isspace((unsigned char)*text)) text++;
    size_t end = strlen(text);
    while (end > 0 && isspace((unsigned char)text[end - 1])) end--;
    size_t n = number_length(text);
    if (n == 0) return -1;
    size_t u = n;
    while (u < end && isspace((unsigned char)text[u])) u++;
    for (size_t i = u; i < end; i++)
        if (isspace((unsigned char)text[i])) return -1;
    double factor = unit_factor(text + u, end - u);
    if (factor < 0) return -1;
    char number[64];
    if (n >= sizeof number) return -1;
    memcpy(number, text, n);
    number[n] = 0;
    double v = strtod(number, NULL) * factor;
    if (!(v >= 0) || v > 9.2e18) return -1;
    /* round half to even, as Python's round() */
    int mode = fegetround();
    fesetround(FE_TONEAREST);
    *bytes = (long)nearbyint(v);
    fesetround(mode);
    return 0;
}
