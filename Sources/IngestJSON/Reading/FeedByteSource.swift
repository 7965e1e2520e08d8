import CZlib

/// A feed's bytes, inflated on the fly when they are gzip: `feed.json.gz` (or gzip
/// piped in) streams through zlib with no temporary file. Concatenated gzip members, as
/// `cat a.gz b.gz` makes, read as one stream. Anything else passes through untouched.
package final class FeedByteSource: ByteSource {
    package let name: String
    private var source: any ByteSource
    /// The gzip stream, when the input is gzip.
    private var stream: UnsafeMutablePointer<z_stream>?
    private let input: UnsafeMutableRawBufferPointer
    /// Input read but not yet handed on (plain input) or not yet inflated (gzip).
    private var pending: Range<Int> = 0..<0
    private var ended = false
    /// Compressed bytes inflated so far, for messages.
    private var consumed = 0
    /// Compressed input: the size of the uncompressed feed is not known up front.
    package var totalBytes: Int? { stream == nil ? source.totalBytes : nil }
    /// Whether the input is gzip.
    package var isCompressed: Bool { stream != nil }

    /// Opens `path` ("-": standard input; `http://…` or `https://…`: a feed over HTTP,
    /// kept in `spool` as it arrives when given, see `HTTPByteSource`) and looks at its first
    /// bytes; `isCancelled` ends a wait for input from a pipe or the network.
    /// - Throws: `IOError` when it cannot be opened or read; `HTTPFeedError`; `ReadCancelled`.
    package init(path: String, isCancelled: (@Sendable () -> Bool)? = nil, spool: String? = nil) throws {
        name = path
        source = HTTPByteSource.isURL(path)
            ? try HTTPByteSource(url: path, spool: spool, isCancelled: isCancelled)
            : try FileByteSource(path: path, isCancelled: isCancelled)
        input = .allocate(byteCount: 1 << 18, alignment: 16)
        // The first two bytes say gzip (1f 8b); a read may return fewer, so read until two or the end.
        var count = 0
        while count < 2 {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: input[count...]))
            if n == 0 { break }
            count += n
        }
        pending = 0..<count
        if count >= 2, input[0] == 0x1F, input[1] == 0x8B {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard czlib_inflate_init(stream) == Z_OK else {
                stream.deallocate()
                throw IOError(errno: 12, operation: "inflate", path: path)
            }
            self.stream = stream
        }
    }

    deinit {
        if let stream {
            inflateEnd(stream)
            stream.deallocate()
        }
        input.deallocate()
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let stream else { return try readPlain(into: buffer) }
        while !ended {
            if pending.isEmpty {
                let n = try source.read(into: input)
                guard n > 0 else {
                    throw CompressionError(path: name, compressedOffset: consumed, reason: "the file ends inside a gzip member (truncated)")
                }
                pending = 0..<n
            }
            stream.pointee.next_in = input.baseAddress!.advanced(by: pending.lowerBound).assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(pending.count)
            stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(buffer.count)
            let status = inflate(stream, Z_NO_FLUSH)
            consumed += pending.count - Int(stream.pointee.avail_in)
            pending = (pending.upperBound - Int(stream.pointee.avail_in))..<pending.upperBound
            let produced = buffer.count - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                // Another member may follow (cat a.gz b.gz); the end of input ends the feed.
                if pending.isEmpty {
                    let n = try source.read(into: input)
                    pending = 0..<n
                }
                if pending.isEmpty { ended = true } else { inflateReset(stream) }
                if produced > 0 { return produced }
            case Z_OK, Z_BUF_ERROR:
                if produced > 0 { return produced }
            default:
                let reason = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw CompressionError(path: name, compressedOffset: consumed, reason: "the gzip data is damaged (\(reason))")
            }
        }
        return 0
    }

    private func readPlain(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !pending.isEmpty else { return try source.read(into: buffer) }
        let n = min(buffer.count, pending.count)
        buffer.baseAddress!.copyMemory(from: input.baseAddress!.advanced(by: pending.lowerBound), byteCount: n)
        pending = (pending.lowerBound + n)..<pending.upperBound
        return n
    }
}

/// A compressed feed that cannot be inflated: where in the compressed file, and why.
public struct CompressionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var compressedOffset: Int
    public var reason: String
    public var description: String { "\(path): \(reason), at byte \(compressedOffset) of the compressed file" }
}
