// Ingest is a Linux package: it calls Glibc (read(2), fsync, flock, mallopt, clock_gettime)
// and links Debian's yajl, zlib, zstd and libpq. Saying so here beats a wall of errors on
// another system; porting means guarding those calls (see README, "Platforms and system packages").
#if !os(Linux)
#error("Ingest builds on Linux only")
#endif
