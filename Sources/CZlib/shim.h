#ifndef INGEST_CZLIB_SHIM_H
#define INGEST_CZLIB_SHIM_H

#include <zlib.h>

/* inflateInit2 is a macro, which Swift cannot call: this is the same call, for gzip
   and zlib streams alike (windowBits 15 + 32: the header says which). */
static inline int czlib_inflate_init(z_stream *stream) {
    return inflateInit2(stream, 15 + 32);
}

#endif
