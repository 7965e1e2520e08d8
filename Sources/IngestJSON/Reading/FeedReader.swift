/// One record of a feed, as the exact bytes of its JSON text in the feed.
///
/// `bytes` points into the reader's buffers and is valid only during the call that
/// receives it: copy what you keep.
public struct FeedRecord {
    /// 0-based position of the record in the feed.
    public let index: Int
    /// The record's JSON text, verbatim: no surrounding whitespace or separators.
    public let bytes: UnsafeRawBufferPointer
    /// Offset of the record's first byte from the start of the input.
    public let byteOffset: Int
    /// The record's member name, for records that are an object's values (`FeedShape.keyed`).
    public var key: String? = nil
    /// The name as the feed wrote it (quoted), when `key` cannot be trusted to be it: a
    /// surrogate escape that is not half of a pair, which yajl turns into `?` or another
    /// character. The splitter writes this text as is, so that the importer rejects the
    /// record for it, as it does such escapes anywhere else.
    public var keyText: [UInt8]? = nil
    /// Set when the record broke a limit (`FeedOptions.maxRecordBytes`, `maxDepth`): its
    /// bytes are empty, and this is the error it would have stopped the feed with. The
    /// reader reads on past it (up to twice the size limit), so that the splitter writes
    /// it as a row the importer rejects with this reason, and the run goes on.
    public var refusal: FeedError? = nil
    /// For a malformed NDJSON line refused (`FeedOptions.rejectsMalformedLines`): the line's
    /// text, for its reject (up to the record size limit).
    public var refusedText: [UInt8]? = nil
    /// With `FeedReader.collectsMemberEnds`, for a record that is an object: two offsets
    /// from its first byte per member of its own, just past the key and just past the
    /// value. `MemberEnds.notPlain` is set on a key or string whose bytes yajl did not hand
    /// over in place (an escape, or a read's end inside it), on an array or object with
    /// such a key or string inside, and on the key of a member nested deeper than the
    /// importer's scan follows. Valid only during the call, like `bytes`. nil when not
    /// collected, for a record that is not an object, and for one with more than 65,536
    /// members or refused for its size.
    public var memberEnds: UnsafeBufferPointer<UInt32>? = nil
}

/// Streams a feed through yajl and hands out its records one at a time, reading
/// through one fixed-size buffer so memory stays flat whatever the feed's size. In an
/// array of records or NDJSON, those between the ones yajl reads are taken by a C scan that checks
/// the same grammar in a fifth of the instructions (FeedParser+Scan.swift); anything it does
/// not take, yajl reads, so errors and limits are yajl's either way.
///
/// ```swift
/// let reader = try FeedReader(path: "photos.json")
/// try reader.read { record in print(record.index, record.bytes.count) }
/// ```
public final class FeedReader {
    public let options: FeedOptions
    /// The feed's name in messages: its path, or "-" for standard input.
    public let name: String
    private var source: any ByteSource
    private var used = false
    /// Records handed out so far.
    public private(set) var recordCount = 0
    /// Bytes read from the input so far (a byte-order mark included).
    public private(set) var bytesRead = 0
    /// For records under a key path: the other top-level members, which hold no records
    /// (the first 19 names), known once the read has ended.
    public private(set) var membersOutsideRecords: [String] = []
    /// Hand each object record's member ends with it (`FeedRecord.memberEnds`), from
    /// yajl's own pass, so that an importer steps over members instead of scanning them.
    public var collectsMemberEnds = false
    /// Take a top-level array's records with the C scan between the ones yajl reads (the
    /// default); off, yajl reads every byte (for the tests that compare the two).
    package var scansRecords = true
    /// Records the scan took (the rest yajl read).
    package private(set) var scannedRecords = 0

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    /// The read buffer grows up to this for records larger than it (see `read`).
    static let largestReadBuffer = 64 << 20

    package init(source: some ByteSource, name: String, options: FeedOptions = FeedOptions()) {
        self.source = source
        self.name = name
        self.options = options
    }

    /// Opens a feed file, or standard input for "-". A read that waits for input from a
    /// pipe ends with `ReadCancelled` once `isCancelled` says so.
    /// - Throws: `IOError` when the file cannot be opened.
    public convenience init(path: String, options: FeedOptions = FeedOptions(), isCancelled: (@Sendable () -> Bool)? = nil) throws {
        self.init(source: try FeedByteSource(path: path, isCancelled: isCancelled), name: path, options: options)
    }

    /// Opens a feed (a file, "-", or an `http(s)://` address whose bytes are kept in `spool`).
    /// - Throws: `IOError`, `HTTPFeedError`.
    package convenience init(path: String, options: FeedOptions, spool: String?, isCancelled: (@Sendable () -> Bool)?) throws {
        self.init(source: try FeedByteSource(path: path, isCancelled: isCancelled, spool: spool), name: path, options: options)
    }

    /// The input's size when known up front (regular files), for progress.
    public var totalBytes: Int? { source.totalBytes }

    /// Reads the feed to its end, calling `onRecord` for every record in order.
    ///
    /// `onBuffer` sees every block of input as read, before it is parsed (for hashing
    /// and progress). An error thrown by either closure stops the read and is rethrown.
    /// A reader reads once.
    /// - Throws: `FeedError` for input that is not a well-formed feed of the expected
    ///   shape or breaks a limit; `IOError` when reading fails.
    public func read(
        onBuffer: (UnsafeRawBufferPointer) throws -> Void = { _ in },
        onRecord: (FeedRecord) throws -> Void
    ) throws {
        guard !used else { fatalError("a FeedReader reads its input once") }
        used = true
        let parser = FeedParser(options: options, name: name, memberEnds: collectsMemberEnds, scansRecords: scansRecords)
        var storage = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(1, options.readBufferSize), alignment: 16)
        defer { storage.deallocate() }

        try withoutActuallyEscaping(onRecord) { handler in
            parser.onRecord = handler
            defer {
                parser.onRecord = nil
                recordCount = parser.recordCount
                scannedRecords = parser.scannedRecords
            }
            var bomMatched = 0
            var bomDone = false
            while true {
                let n = try source.read(into: storage)
                if n == 0 { break }
                let block = UnsafeRawBufferPointer(rebasing: storage[0..<n])
                try onBuffer(block)
                var start = 0
                if !bomDone {
                    while start < n, bomMatched < 3, block[start] == Self.byteOrderMark[bomMatched] {
                        start += 1
                        bomMatched += 1
                    }
                    if bomMatched == 3 {
                        bomDone = true
                    } else if start < n {
                        bomDone = true
                        try parseHeldBOMPrefix(bomMatched, parser)
                    }
                }
                if start < n {
                    try parser.parse(UnsafeRawBufferPointer(rebasing: block[start...]), base: bytesRead + start)
                }
                bytesRead += n
                // A record (or one string in it) longer than the buffer is fed to yajl across
                // many calls, and yajl looks at a token it holds again on each: double the buffer
                // as such a record grows past 1 MiB, so a record of n bytes costs O(n), not O(n²)
                // (smaller records, and tests that read a byte at a time, keep the buffer as set).
                if parser.carriedBytes > max(storage.count, 1 << 20), storage.count < Self.largestReadBuffer {
                    let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: storage.count * 2, alignment: 16)
                    storage.deallocate()
                    storage = larger
                }
            }
            if !bomDone { try parseHeldBOMPrefix(bomMatched, parser) }
            try parser.finish(totalBytes: bytesRead)
            membersOutsideRecords = parser.membersOutsideRecords
        }
    }

    /// Bytes that began like a byte-order mark but were not one are ordinary input.
    private func parseHeldBOMPrefix(_ count: Int, _ parser: FeedParser) throws {
        guard count > 0 else { return }
        try Self.byteOrderMark[0..<count].withUnsafeBytes { try parser.parse($0, base: 0) }
    }
}
