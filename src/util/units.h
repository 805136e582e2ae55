/* Sizes with units in the environment, the C twin of python/isthmus/config/units.py's
 * parse_size: "16384" (bytes), "16KiB", "1.5 MiB", "64KB", "2 bytes"; K, M, G, T are
 * powers of 1000, Ki, Mi, Gi, Ti of 1024, and a prefix needs its B. Both parsers are
 * checked against the same cases, tests/cases/sizes.tsv. */
#ifndef ISTHMUS_UNITS_H
#define ISTHMUS_UNITS_H

/* 0 and *bytes set, or -1 when text is not a size. */
int ist_parse_size(const char *text, long *bytes);

#endif
