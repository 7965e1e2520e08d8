import CZstd

/// How a PostgreSQL run keeps its chunks' bytes in `_ingest_chunks.bytes`: one zstd frame
/// at level 1. A generated photo feed's chunk shrinks to about a sixth, so the database
/// writes (and WAL-logs) a sixth of the bytes, for about 1.5 µs of client CPU per record;
/// reading one back costs a fraction of that. A chunk stored by an earlier version is
/// plain NDJSON: a zstd frame begins with 28 B5 2F FD, which no JSON record does (`(`
/// starts no JSON value), so both read back alike.
enum ChunkCompression {
    static let level: Int32 = 1

    /// `bytes` as one zstd frame.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        let bound = ZSTD_compressBound(bytes.count)
        // Into a scratch buffer, then copied out at its size: the frame is a sixth of the
        // bound, and an array trimmed in place would keep the whole bound allocated.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { out in
            let written = bytes.withUnsafeBytes { input in
                ZSTD_compress(out.baseAddress, bound, input.baseAddress, input.count, level)
            }
            // Compressing into a buffer of ZSTD_compressBound cannot fail: keep the bytes as they are if it did.
            guard ZSTD_isError(written) == 0 else { return bytes }
            return Array(UnsafeBufferPointer(rebasing: out[..<written]))
        }
    }

    /// The chunk's NDJSON from its stored bytes: decompressed when they are a zstd frame,
    /// as they are otherwise. Nil for a frame that does not decompress (damaged bytes).
    static func decompress(_ stored: [UInt8]) -> [UInt8]? {
        guard stored.count >= 4, stored[0] == 0x28, stored[1] == 0xB5, stored[2] == 0x2F, stored[3] == 0xFD else { return stored }
        let size = stored.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest values: compress() always records the size.
        guard size < UInt64.max - 1, size <= UInt64(Int.max) else { return nil }
        var written = 0
        // Written in place, not zeroed first.
        let output = [UInt8](unsafeUninitializedCapacity: Int(size)) { out, count in
            written = stored.withUnsafeBytes { input in ZSTD_decompress(out.baseAddress, out.count, input.baseAddress, input.count) }
            count = ZSTD_isError(written) == 0 ? written : 0
        }
        guard ZSTD_isError(written) == 0, written == Int(size) else { return nil }
        return output
    }
}
