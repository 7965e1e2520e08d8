import CZstd
import IngestJSON

/// How a PostgreSQL run keeps its chunks' bytes in `_ingest_chunks.bytes`: one zstd frame
/// at level 1. A generated photo feed's chunk shrinks to about a sixth, so the database
/// writes (and WAL-logs) a sixth of the bytes, for about 1.5 µs of client CPU per record;
/// reading one back costs a fraction of that. A chunk stored by an earlier version is
/// plain NDJSON: a zstd frame begins with 28 B5 2F FD, which no JSON record does (`(`
/// starts no JSON value), so both read back alike.
enum ChunkCompression {
    static let level: Int32 = 1

    /// `bytes` as one zstd frame (with its content size, for `decompress`'s one-step path).
    /// Compressing cannot fail short of memory: the bytes are kept as they are if it did.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        let encoder = Encoder()
        encoder.begin(pledgedSize: bytes.count)
        bytes.withUnsafeBytes { encoder.append($0) }
        return (try? encoder.finish()) ?? bytes
    }

    /// The chunk's NDJSON from its stored bytes: decompressed when they are a zstd frame,
    /// as they are otherwise. Nil for a frame that does not decompress (damaged bytes).
    static func decompress(_ stored: [UInt8]) -> [UInt8]? {
        guard stored.count >= 4, stored[0] == 0x28, stored[1] == 0xB5, stored[2] == 0x2F, stored[3] == 0xFD else { return stored }
        let size = stored.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // A frame compressed as it was split (`Encoder`) does not say its size.
        if size == UInt64.max { return decompressStreaming(stored) }
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

    /// A frame of unknown size, decompressed through a 64 KiB buffer into an array that
    /// starts at about the size such a chunk has (they shrink to about a sixth).
    private static func decompressStreaming(_ stored: [UInt8]) -> [UInt8]? {
        guard let context = ZSTD_createDCtx() else { return nil }
        defer { ZSTD_freeDCtx(context) }
        var output: [UInt8] = []
        output.reserveCapacity(stored.count * 8)
        let finished = stored.withUnsafeBytes { source -> Bool in
            var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64 << 10) { scratch in
                while true {
                    var out = ZSTD_outBuffer(dst: scratch.baseAddress, size: scratch.count, pos: 0)
                    let hint = ZSTD_decompressStream(context, &out, &input)
                    if ZSTD_isError(hint) != 0 { return false }
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<out.pos]))
                    if hint == 0 { return input.pos == input.size }
                    // Input used up with the frame unfinished: the bytes were cut short.
                    if input.pos == input.size && out.pos < out.size { return false }
                }
            }
        }
        return finished ? output : nil
    }

    /// Compresses a split's chunks as their blocks are written, one zstd frame each, with
    /// one compression context for the whole split.
    final class Encoder: ChunkEncoder {
        private let context = ZSTD_createCCtx()
        private var frame: [UInt8] = []
        private var lastSize = 0
        private var failure: String?

        deinit { if let context { ZSTD_freeCCtx(context) } }

        func begin() { begin(pledgedSize: nil) }

        /// Starts a frame; given the chunk's size, the frame records it.
        func begin(pledgedSize: Int?) {
            frame = []
            frame.reserveCapacity(pledgedSize.map { $0 / 4 + 1024 } ?? lastSize * 9 / 8 + 1024)
            failure = context == nil ? "no memory for a compression context" : nil
            guard let context else { return }
            ZSTD_CCtx_reset(context, ZSTD_reset_session_only)
            ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
            if let pledgedSize { ZSTD_CCtx_setPledgedSrcSize(context, UInt64(pledgedSize)) }
        }

        func append(_ block: UnsafeRawBufferPointer) {
            if failure == nil { stream(block, ZSTD_e_continue) }
        }

        func finish() throws -> [UInt8] {
            if failure == nil { stream(UnsafeRawBufferPointer(start: nil, count: 0), ZSTD_e_end) }
            if let failure { throw ImportError("a chunk could not be compressed to be stored: \(failure)") }
            lastSize = frame.count
            let finished = frame
            frame = []
            return finished
        }

        private func stream(_ block: UnsafeRawBufferPointer, _ directive: ZSTD_EndDirective) {
            var input = ZSTD_inBuffer(src: block.baseAddress, size: block.count, pos: 0)
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64 << 10) { scratch in
                while true {
                    var output = ZSTD_outBuffer(dst: scratch.baseAddress, size: scratch.count, pos: 0)
                    let remaining = ZSTD_compressStream2(context, &output, &input, directive)
                    if ZSTD_isError(remaining) != 0 {
                        failure = String(cString: ZSTD_getErrorName(remaining))
                        return
                    }
                    frame.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<output.pos]))
                    if directive == ZSTD_e_end ? remaining == 0 : input.pos == input.size { return }
                }
            }
        }
    }
}
