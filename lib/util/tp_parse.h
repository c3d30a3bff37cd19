/* Parsers for command-line values.  They are part of the public interface
 * (tokperf/parse.h, so the CLI and other programs share them); this header
 * is kept so library code can name what it uses. */
#ifndef TP_PARSE_H
#define TP_PARSE_H

#include "tokperf/parse.h"

#endif
