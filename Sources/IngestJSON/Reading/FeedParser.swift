import CYajl

/// The state machine behind `FeedReader`: yajl's callbacks land here.
///
/// yajl reports tokens, not positions, but inside a callback
/// `yajl_get_bytes_consumed` is the offset just past the current token. A record
/// therefore ends at the offset of its last token, and starts at the first byte
/// after the previous record's end that is not whitespace or a comma. That gives
/// each record's exact byte range without re-serializing it. Bytes of a record that
/// crosses a buffer boundary are carried over in `pending`.
final class FeedParser {
    let options: FeedOptions
    let name: String
    // The fields marked `@exclusivity(unchecked)` are touched for every record; the parser
    // lives on the one thread that reads the feed and never lends them out `inout` across a
    // call back into itself, so the runtime's access bookkeeping is skipped for them.
    @exclusivity(unchecked) var onRecord: ((FeedRecord) throws -> Void)?
    @exclusivity(unchecked) var recordCount = 0

    var handle: yajl_handle!
    private let callbacks: UnsafeMutablePointer<yajl_callbacks>
    /// Shared with the C callbacks, which keep `depth` while inside a record.
    let state: UnsafeMutablePointer<cyajl_feed_state>
    @exclusivity(unchecked) var buffer = UnsafeRawBufferPointer(start: nil, count: 0)
    @exclusivity(unchecked) var bufferBase = 0
    /// Where the top-level value ended (not for NDJSON): a feed that ends in a token after
    /// it (`[]\n42`) has content past its end, not a truncated array.
    var topLevelEnd: Int?
    var tracker = PositionTracker()

    /// Open arrays and objects above the current token.
    var depth: Int {
        get { Int(state.pointee.depth) }
        set { state.pointee.depth = Int32(newValue) }
    }
    /// The depth at which records are values: inside the records array, or 0 for NDJSON.
    let recordsDepth: Int
    /// Outside the records array the C callbacks forward every event here.
    var inRecords: Bool {
        didSet { state.pointee.watch = inRecords ? 0 : 1 }
    }
    let keyPath: [String]?
    /// Records are an object's values (`FeedShape.keyed`); `recordKey` is the current one's name.
    let keyed: Bool
    @exclusivity(unchecked) var recordKey: String?
    /// `FeedRecord.keyText` of the current keyed record.
    @exclusivity(unchecked) var recordKeyText: [UInt8]?

    var keyStack: [String?] = []
    var expectingRecords = false
    var recordsFound = false
    var topLevelKeys: [String] = []
    /// Top-level members beside the one that holds the records (the first 19): content
    /// the feed holds that its records do not.
    var membersOutsideRecords: [String] {
        guard let first = keyPath?.first else { return [] }
        return topLevelKeys.filter { $0 != first }
    }
    var sawValue: Bool { state.pointee.saw_value != 0 }

    /// Where the bytes after the previous record begin.
    @exclusivity(unchecked) var gapStart = 0
    @exclusivity(unchecked) var gapSawNewline = false
    @exclusivity(unchecked) var pending: [UInt8] = []
    /// Bytes of the record in progress carried from earlier buffers (or read past, for a
    /// refused record: the reader grows its buffer for both alike).
    var carriedBytes: Int { refusal == nil ? pending.count : refusedSoFar }
    /// Why the record in progress is not kept: it broke a limit. It is read to its end,
    /// holding none of it, and delivered empty with this error (`FeedRecord.refusal`).
    @exclusivity(unchecked) var refusal: FeedError?
    /// The refusal was made as the record crossed a read, before its size was known.
    var refusalSizeUnknown = false
    /// Where the refused record began.
    var refusedStart = 0
    /// The refused record's bytes read so far (it runs on past the current read).
    var refusedSoFar: Int { bufferBase + buffer.count - refusedStart }
    /// How far past the size limit a refused record is read before the feed stops: yajl holds
    /// a string token whole until it ends, so reading on costs memory up to this.
    var refusedReadLimit: Int { options.maxRecordBytes > Int.max / 2 ? Int.max : options.maxRecordBytes * 2 }
    @exclusivity(unchecked) var failure: (any Error)?
    /// The record handler threw: its error is not the feed's, and never makes a line malformed.
    @exclusivity(unchecked) var handlerFailed = false
    /// NDJSON whose malformed lines are rejected as records (`FeedOptions.rejectsMalformedLines`).
    private(set) var rejectsLines = false
    /// A malformed line read past until its end: its error, its first byte's offset, its text so far.
    var malformedLine: (error: FeedError, start: Int, text: [UInt8])?
    /// Lines rejected as malformed so far.
    var malformedLines = 0
    /// What yajl would let through that RFC 8259 forbids.
    var strict = StrictJSONBytes()
    /// Records of an array (top-level or at a key path) or of NDJSON are taken by the C scan
    /// between the ones yajl reads (FeedParser+Scan.swift).
    var scansRecords: Bool
    /// yajl stopped after a record for the scan to take the ones after it.
    @exclusivity(unchecked) var resumeScan = false
    /// Scans in a row that took no record; past a few, the feed is left to yajl.
    var emptyScans = 0
    /// Records the scan took.
    var scannedRecords = 0
    /// Where in `buffer` the bytes given to the current yajl handle's last parse begin:
    /// yajl counts its offsets from there.
    @exclusivity(unchecked) var segmentStart = 0

    init(options: FeedOptions, name: String, memberEnds: Bool = false, scansRecords: Bool = true) {
        self.options = options
        self.name = name
        switch options.shape {
        case .array:
            recordsDepth = 1
            inRecords = false
            keyPath = nil
        case .keyPath(let keys):
            recordsDepth = keys.count + 1
            inRecords = false
            keyPath = keys
        case .ndjson:
            recordsDepth = 0
            inRecords = true
            keyPath = nil
        case .keyed(let keys):
            recordsDepth = keys.count + 1
            inRecords = false
            keyPath = keys.isEmpty ? nil : keys
        }
        if case .keyed = options.shape { keyed = true } else { keyed = false }
        switch options.shape {
        case .array, .keyPath: self.scansRecords = scansRecords
        // A malformed line rejected, not stopping the feed, is parsed a line at a time (FeedParser+Lines.swift).
        case .ndjson: self.scansRecords = scansRecords && !options.rejectsMalformedLines
        case .keyed: self.scansRecords = false
        }
        // Keys matter on the way to a key path, and for member ends; without the callback
        // yajl skips decoding them, and a records array of objects has many.
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: cyajl_feed_callbacks(keyPath == nil && !keyed && !memberEnds ? 0 : 1))
        state = .allocate(capacity: 1)
        state.initialize(to: cyajl_feed_state())
        state.pointee.records_depth = Int32(recordsDepth)
        state.pointee.max_depth = Int32(clamping: options.maxDepth)
        state.pointee.watch = inRecords ? 0 : 1
        state.pointee.key_depth = keyed ? Int32(recordsDepth) : -1
        state.pointee.members_on = memberEnds ? 1 : 0
        state.pointee.capture_depth = -1
        state.pointee.swift = Unmanaged.passUnretained(self).toOpaque()
        state.pointee.on_event = { swift, event in FeedParser.with(swift) { $0.event(event) } }
        state.pointee.on_key = { swift, key, length in FeedParser.with(swift) { $0.mapKey(key, length) } }
        rejectsLines = options.shape == .ndjson && options.rejectsMalformedLines
        makeHandle()
    }

    /// A fresh yajl handle on the parser's state: at the start, and after a malformed line.
    func makeHandle() {
        if let handle { yajl_free(handle) }
        handle = yajl_alloc(callbacks, nil, state)
        state.pointee.handle = handle
        if options.shape == .ndjson {
            _ = cyajl_config(handle, yajl_allow_multiple_values, 1)
        }
    }

    deinit {
        yajl_free(handle)
        cyajl_members_free(state)
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    // MARK: - Driving the parse

    func parse(_ block: UnsafeRawBufferPointer, base: Int) throws {
        guard block.count > 0 else { return }
        if rejectsLines { return try parseLines(block, base: base) }
        try parseBlock(block, base: base)
    }

    func parseBlock(_ block: UnsafeRawBufferPointer, base: Int) throws {
        guard block.count > 0 else { return }
        buffer = block
        bufferBase = base
        if let (index, kind, message) = strict.check(block) {
            throw error(kind, message, at: index)
        }
        let bytes = block.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var at = 0
        segmentStart = 0
        while at < block.count {
            segmentStart = at
            cyajl_set_block(state, bytes + at, block.count - at, Int64(base + at))
            let status = yajl_parse(handle, bytes + at, block.count - at)
            guard resumeScan else {
                try check(status, atEnd: false)
                break
            }
            resumeScan = false
            at = try scanRecords(bytes, count: block.count, from: currentIndex)
            restartHandle()
        }
        if inRecords { try carryPending() }
        noteTrailingContent(in: block, base: base)
        if !sawContent { sawContent = block.contains { ![0x20, 0x0A, 0x0D, 0x09].contains($0) } }
        tracker.advance(over: block)
    }

    /// Whether any byte so far was not whitespace: a feed of one unclosed string (`"abc`)
    /// completes no value, yet is no empty feed.
    var sawContent = false

    /// The first byte that is not whitespace after the end of the top-level value.
    /// yajl refuses most such content itself, but takes a string begun there and never
    /// closed (`[…] "abc`) for a token still to come, and then finishes without a word.
    var trailingContent: FeedError?

    func noteTrailingContent(in block: UnsafeRawBufferPointer, base: Int) {
        guard trailingContent == nil, let end = topLevelEnd, end < base + block.count else { return }
        var index = max(end - base, 0)
        while index < block.count, [0x20, 0x0A, 0x0D, 0x09].contains(block[index]) { index += 1 }
        if index < block.count {
            trailingContent = error(.trailingContent, "unexpected content after the end of the top-level value", at: index)
        }
    }

    func finish(totalBytes: Int) throws {
        if rejectsLines, try finishLines(totalBytes: totalBytes) { return }
        buffer = UnsafeRawBufferPointer(start: nil, count: 0)
        bufferBase = totalBytes
        segmentStart = 0
        // yajl completes by parsing one space of its own, after the last byte.
        cyajl_set_block(state, nil, 0, Int64(totalBytes))
        let status = yajl_complete_parse(handle)
        guard sawValue || status == yajl_status_client_canceled else {
            if sawContent { throw error(.truncated, "truncated input: the feed ends inside its first value") }
            throw error(.emptyFeed, totalBytes == 0
                ? "the feed is empty (0 bytes)"
                : "the feed holds no JSON value (\(totalBytes) bytes of whitespace)")
        }
        try check(status, atEnd: true)
        if let trailingContent { throw trailingContent }
        // yajl finishes without a word on a string begun after the last value and never
        // closed; the bytes since that value are still held for the record they began.
        if options.shape == .ndjson, !pending.isEmpty || refusal != nil {
            throw error(.truncated, "truncated input: the feed ends inside record \(recordCount + 1)")
        }
        if let keyPath, !recordsFound {
            let keys = topLevelKeys.isEmpty ? "none" : topLevelKeys.map { "'\($0)'" }.joined(separator: ", ")
            throw error(.keyPathNotFound,
                "no \(keyed ? "object" : "array") at key path '\(keyPath.joined(separator: "."))' (top-level keys: \(keys))")
        }
    }

    func check(_ status: yajl_status, atEnd: Bool) throws {
        switch status {
        case yajl_status_ok:
            return
        case yajl_status_client_canceled:
            throw failure ?? error(.malformedJSON, "the parse was stopped")
        default:
            // yajl stops just past the offending byte, except inside a string,
            // where it stops on it.
            var consumed = min(segmentStart + Int(yajl_get_bytes_consumed(handle)), buffer.count)
            let yajlMessage = yajlErrorMessage(handle)
            if !atEnd && !yajlMessage.contains("inside string") { consumed -= 1 }
            if !atEnd, MisplacedToken.grammarMessages.contains(yajlMessage), let token = misplacedToken(lastByte: consumed) {
                consumed = token
            }
            throw translate(yajlMessage, at: consumed, atEnd: atEnd)
        }
    }

    // MARK: - Errors

    func fail(_ kind: FeedError.Kind, _ message: String, at index: Int? = nil) -> Bool {
        failure = error(kind, message, at: index)
        return false
    }

    func error(_ kind: FeedError.Kind, _ message: String, at index: Int? = nil) -> FeedError {
        let index = index ?? (buffer.count > 0 ? currentIndex : 0)
        let position = tracker.position(at: index, in: buffer, base: bufferBase)
        let excerpt = tracker.excerpt(at: index, in: buffer)
        return FeedError(kind, message, at: position, excerpt: excerpt.text, caret: excerpt.caret, source: name)
    }

    // MARK: - Calls from C

    /// Calls into the parser without retaining it: the parser owns the yajl handle, so
    /// it outlives every callback.
    @inline(__always)
    private static func with(_ context: UnsafeMutableRawPointer?, _ body: (FeedParser) -> Bool) -> Int32 {
        Unmanaged<FeedParser>.fromOpaque(context!)._withUnsafeGuaranteedRef(body) ? 1 : 0
    }
}
