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
    var onRecord: ((FeedRecord) throws -> Void)?
    private(set) var recordCount = 0

    private var handle: yajl_handle!
    private let callbacks: UnsafeMutablePointer<yajl_callbacks>
    /// Shared with the C callbacks, which keep `depth` while inside a record.
    private let state: UnsafeMutablePointer<cyajl_feed_state>
    var buffer = UnsafeRawBufferPointer(start: nil, count: 0)
    var bufferBase = 0
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
    private let keyPath: [String]?
    /// Records are an object's values (`FeedShape.keyed`); `recordKey` is the current one's name.
    let keyed: Bool
    private var recordKey: String?
    /// `FeedRecord.keyText` of the current keyed record.
    private var recordKeyText: [UInt8]?

    private var keyStack: [String?] = []
    private var expectingRecords = false
    var recordsFound = false
    private var topLevelKeys: [String] = []
    /// Top-level members beside the one that holds the records (the first 19): content
    /// the feed holds that its records do not.
    var membersOutsideRecords: [String] {
        guard let first = keyPath?.first else { return [] }
        return topLevelKeys.filter { $0 != first }
    }
    private var sawValue: Bool { state.pointee.saw_value != 0 }

    /// Where the bytes after the previous record begin.
    private var gapStart = 0
    private var gapSawNewline = false
    private var pending: [UInt8] = []
    /// Bytes of the record in progress carried from earlier buffers (or read past, for a
    /// refused record: the reader grows its buffer for both alike).
    var carriedBytes: Int { refusal == nil ? pending.count : refusedBytes }
    /// Why the record in progress is not kept: it broke a limit. It is read to its end,
    /// holding none of it, and delivered empty with this error (`FeedRecord.refusal`).
    private var refusal: FeedError?
    /// Where the refused record began, and how many of its bytes were read.
    private var refusedStart = 0
    private var refusedBytes = 0
    /// How far past the size limit a refused record is read before the feed stops: yajl holds
    /// a string token whole until it ends, so reading on costs memory up to this.
    private var refusedReadLimit: Int { options.maxRecordBytes > Int.max / 2 ? Int.max : options.maxRecordBytes * 2 }
    private var failure: (any Error)?
    /// What yajl would let through that RFC 8259 forbids.
    private var strict = StrictJSONBytes()

    init(options: FeedOptions, name: String) {
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
        // Keys matter only on the way to a key path; without the callback yajl skips
        // decoding them, and a records array of objects has many.
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: cyajl_feed_callbacks(keyPath == nil && !keyed ? 0 : 1))
        state = .allocate(capacity: 1)
        state.initialize(to: cyajl_feed_state(
            depth: 0, records_depth: Int32(recordsDepth), max_depth: Int32(clamping: options.maxDepth),
            watch: inRecords ? 0 : 1, key_depth: keyed ? Int32(recordsDepth) : -1, saw_value: 0, swift: nil, on_event: nil, on_key: nil))
        state.pointee.swift = Unmanaged.passUnretained(self).toOpaque()
        state.pointee.on_event = { swift, event in FeedParser.with(swift) { $0.event(event) } }
        state.pointee.on_key = { swift, key, length in FeedParser.with(swift) { $0.mapKey(key, length) } }
        handle = yajl_alloc(callbacks, nil, state)
        if options.shape == .ndjson {
            _ = cyajl_config(handle, yajl_allow_multiple_values, 1)
        }
    }

    deinit {
        yajl_free(handle)
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    // MARK: - Driving the parse

    func parse(_ block: UnsafeRawBufferPointer, base: Int) throws {
        guard block.count > 0 else { return }
        buffer = block
        bufferBase = base
        if let (index, message) = strict.check(block) {
            throw error(message.hasPrefix("invalid UTF-8") ? .invalidUTF8 : .malformedJSON, message, at: index)
        }
        let status = yajl_parse(handle, block.baseAddress!.assumingMemoryBound(to: UInt8.self), block.count)
        try check(status, atEnd: false)
        if inRecords { try carryPending() }
        noteTrailingContent(in: block, base: base)
        if !sawContent { sawContent = block.contains { ![0x20, 0x0A, 0x0D, 0x09].contains($0) } }
        tracker.advance(over: block)
    }

    /// Whether any byte so far was not whitespace: a feed of one unclosed string (`"abc`)
    /// completes no value, yet is no empty feed.
    private var sawContent = false

    /// The first byte that is not whitespace after the end of the top-level value.
    /// yajl refuses most such content itself, but takes a string begun there and never
    /// closed (`[…] "abc`) for a token still to come, and then finishes without a word.
    private var trailingContent: FeedError?

    private func noteTrailingContent(in block: UnsafeRawBufferPointer, base: Int) {
        guard trailingContent == nil, let end = topLevelEnd, end < base + block.count else { return }
        var index = max(end - base, 0)
        while index < block.count, [0x20, 0x0A, 0x0D, 0x09].contains(block[index]) { index += 1 }
        if index < block.count {
            trailingContent = error(.trailingContent, "unexpected content after the end of the top-level value", at: index)
        }
    }

    func finish(totalBytes: Int) throws {
        buffer = UnsafeRawBufferPointer(start: nil, count: 0)
        bufferBase = totalBytes
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

    private func check(_ status: yajl_status, atEnd: Bool) throws {
        switch status {
        case yajl_status_ok:
            return
        case yajl_status_client_canceled:
            throw failure ?? error(.malformedJSON, "the parse was stopped")
        default:
            // yajl stops just past the offending byte, except inside a string,
            // where it stops on it.
            var consumed = min(Int(yajl_get_bytes_consumed(handle)), buffer.count)
            let yajlMessage = yajlErrorMessage(handle)
            if !atEnd && !yajlMessage.contains("inside string") { consumed -= 1 }
            throw translate(yajlMessage, at: consumed, atEnd: atEnd)
        }
    }

    // MARK: - Records

    private var currentIndex: Int { min(Int(yajl_get_bytes_consumed(handle)), buffer.count) }

    @inline(__always)
    private static func isSeparator(_ byte: UInt8) -> Bool {
        // The colon comes between a keyed record's name and its value.
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == 0x2C || byte == 0x3A
    }

    /// Index of the first byte at or after `start` that is not whitespace or a comma.
    private func skipSeparators(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        while i < bytes.count, Self.isSeparator(bytes[i]) {
            if bytes[i] == 0x0A { gapSawNewline = true }
            i += 1
        }
        return i
    }

    /// Keeps the part of a record that the current buffer holds, as the buffer is about to be reused.
    private func carryPending() throws {
        if refusal != nil {
            refusedBytes = bufferBase + buffer.count - refusedStart
            if refusedBytes > refusedReadLimit {
                throw error(.recordTooLarge,
                    "record \(recordCount + 1) (from byte \(refusedStart)) is larger than \(refusedReadLimit) bytes, twice the record size limit of \(options.maxRecordBytes) bytes: the feed is not read past it")
            }
            return
        }
        var start = max(gapStart - bufferBase, 0)
        if pending.isEmpty {
            start = skipSeparators(in: buffer, from: start)
            gapStart = bufferBase + start
            if start < buffer.count, let failure = checkOwnLine(at: start) { throw failure }
        }
        pending.append(contentsOf: buffer[start...])
        if pending.count > options.maxRecordBytes {
            refuse(error(.recordTooLarge,
                "record \(recordCount + 1) (from byte \(gapStart)) is larger than the record size limit of \(options.maxRecordBytes) bytes"),
                   start: gapStart)
            refusedBytes = bufferBase + buffer.count - refusedStart
        }
    }

    /// The record in progress broke a limit: it is read to its end without being held.
    private func refuse(_ failure: FeedError, start: Int) {
        guard refusal == nil else { return }
        refusal = failure
        refusedStart = start
        refusedBytes = 0
        pending.removeAll(keepingCapacity: false)
    }

    /// Where the record in progress began.
    private func recordStart() -> Int {
        pending.isEmpty ? bufferBase + skipSeparators(in: buffer, from: max(gapStart - bufferBase, 0)) : gapStart
    }

    private func endRecord() -> Bool {
        let end = currentIndex
        if let refusal { return deliverRefused(refusal, end: end) }
        let start: Int
        if pending.isEmpty {
            let first = skipSeparators(in: buffer, from: max(gapStart - bufferBase, 0))
            if let failure = checkOwnLine(at: first) {
                self.failure = failure
                return false
            }
            start = bufferBase + first
            return deliver(UnsafeRawBufferPointer(rebasing: buffer[first..<end]), start: start, end: end)
        }
        pending.append(contentsOf: buffer[0..<end])
        start = gapStart
        return pending.withUnsafeBytes { deliver($0, start: start, end: end) }
    }

    /// In NDJSON a record that begins (at `index`) on the line where the one before ended is an error.
    private func checkOwnLine(at index: Int) -> FeedError? {
        guard options.shape == .ndjson, recordCount > 0, !gapSawNewline else { return nil }
        return error(.multipleValuesOnLine,
            "record \(recordCount + 1) starts on the line of the record before it (NDJSON holds one value per line)",
            at: index)
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer, start: Int, end: Int) -> Bool {
        if bytes.count > options.maxRecordBytes {
            refuse(error(.recordTooLarge,
                "record \(recordCount + 1) (from byte \(start)) is \(bytes.count) bytes, over the record size limit of \(options.maxRecordBytes) bytes"),
                   start: start)
            return deliverRefused(refusal!, end: end)
        }
        do {
            try onRecord?(FeedRecord(index: recordCount, bytes: bytes, byteOffset: start, key: recordKey, keyText: recordKeyText))
        } catch {
            failure = error
            return false
        }
        recordCount += 1
        gapStart = bufferBase + end
        gapSawNewline = false
        pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        return true
    }

    /// Hands on a record that broke a limit, empty, with the error it broke it with.
    private func deliverRefused(_ failure: FeedError, end: Int) -> Bool {
        do {
            try onRecord?(FeedRecord(index: recordCount, bytes: UnsafeRawBufferPointer(start: nil, count: 0), byteOffset: refusedStart,
                                     key: recordKey, keyText: recordKeyText, refusal: failure))
        } catch {
            self.failure = error
            return false
        }
        recordCount += 1
        gapStart = bufferBase + end
        gapSawNewline = false
        refusal = nil
        refusedBytes = 0
        return true
    }

    // MARK: - Events

    /// An event the C callbacks passed on (see shim.h for which).
    private func event(_ code: Int32) -> Bool {
        switch Int(code) {
        case Int(CYAJL_NULL): return scalar("null")
        case Int(CYAJL_BOOLEAN): return scalar("a boolean")
        case Int(CYAJL_NUMBER): return scalar("a number")
        case Int(CYAJL_STRING): return scalar("a string")
        case Int(CYAJL_START_MAP): return startContainer(isObject: true)
        case Int(CYAJL_END_MAP): return endContainer(isObject: true)
        case Int(CYAJL_START_ARRAY): return startContainer(isObject: false)
        default: return endContainer(isObject: false)
        }
    }

    private func scalar(_ kind: String) -> Bool {
        if expectingRecords {
            return fail(.keyPathNotAnArray, "the value at key path '\(keyPathText)' is \(kind), not \(keyed ? "an object of records" : "an array of records")")
        }
        if depth == 0 {
            switch options.shape {
            case .array:
                return fail(.notAnArray, "expected a top-level array of records, found \(kind)")
            case .keyPath:
                return fail(.keyPathNotFound, "records at key path '\(keyPathText)' need a top-level object, found \(kind)")
            case .keyed:
                return fail(.notAnArray, "expected a top-level object (keyed records), found \(kind)")
            case .ndjson:
                return endRecord()
            }
        }
        return inRecords && depth == recordsDepth ? endRecord() : true
    }

    private func startContainer(isObject: Bool) -> Bool {
        let bracket = max(currentIndex - 1, 0)
        let kind = isObject ? "an object" : "an array"
        if expectingRecords {
            guard isObject == keyed else {
                return fail(.keyPathNotAnArray, keyed
                    ? "the value at key path '\(keyPathText)' is an array, not an object of keyed records"
                    : "the value at key path '\(keyPathText)' is an object, not an array of records (its values are records when the feed is read as keyed)", at: bracket)
            }
            expectingRecords = false
            recordsFound = true
            return enterRecords()
        }
        if depth == 0 {
            switch options.shape {
            case .array:
                return isObject ? fail(.notAnArray,
                    "expected a top-level array of records, found an object", at: bracket)
                    : enterRecords()
            case .keyPath:
                if !isObject {
                    return fail(.keyPathNotFound, "records at key path '\(keyPathText)' need a top-level object, found \(kind)", at: bracket)
                }
            case .keyed(let keys):
                if !isObject {
                    return fail(.notAnArray, "keyed records need a top-level object, found \(kind)", at: bracket)
                }
                if keys.isEmpty {
                    recordsFound = true
                    return enterRecords()
                }
            case .ndjson:
                break
            }
        }
        depth += 1
        if depth > options.maxDepth {
            guard inRecords && depth > recordsDepth else {
                return fail(.depthLimitExceeded, "the feed nests deeper than the limit of \(options.maxDepth) levels", at: bracket)
            }
            // Read on to the record's end (the C callbacks count its levels), holding none of it.
            if refusal == nil {
                refuse(error(.depthLimitExceeded, "record \(recordCount + 1) nests deeper than the limit of \(options.maxDepth) levels", at: bracket),
                       start: recordStart())
            }
            return true
        }
        if keyPath != nil && !inRecords { keyStack.append(nil) }
        return true
    }

    private func enterRecords() -> Bool {
        depth += 1
        inRecords = true
        gapStart = bufferBase + currentIndex
        gapSawNewline = false
        return true
    }

    private func endContainer(isObject: Bool) -> Bool {
        if inRecords && depth == recordsDepth && options.shape != .ndjson {
            inRecords = false
            pending.removeAll()
            depth -= 1
            if depth == 0 { topLevelEnd = bufferBase + currentIndex }
            return true
        }
        depth -= 1
        if depth == 0 && options.shape != .ndjson { topLevelEnd = bufferBase + currentIndex }
        if keyPath != nil && !inRecords { keyStack.removeLast() }
        return inRecords && depth == recordsDepth ? endRecord() : true
    }

    private func mapKey(_ key: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
        if keyed && inRecords && depth == recordsDepth {
            // A keyed record's name: its bytes begin after it (and the colon).
            recordKey = String(decoding: UnsafeBufferPointer(start: key, count: length), as: UTF8.self)
            recordKeyText = nil
            // A key yajl had to decode (it had escapes) is not in the buffer as read.
            let inPlace = key.map { pointer in
                buffer.baseAddress.map { UnsafeRawPointer(pointer) >= $0 && UnsafeRawPointer(pointer) < $0 + buffer.count } ?? false
            } ?? true
            if !inPlace {
                // The name as read. Nothing carried over: the gap before it, and so the name,
                // began in this read. Else they began in an earlier one (once a read at most).
                let read = UnsafeRawBufferPointer(rebasing: buffer[0..<currentIndex])
                let text = Self.lastString(in: read, after: pending.isEmpty ? nil : pending)
                if let text, text.withUnsafeBytes({ JSONValueBuilder.loneSurrogate(in: $0) }) != nil {
                    recordKeyText = text
                }
            }
            pending.removeAll(keepingCapacity: true)
            gapStart = bufferBase + currentIndex
            gapSawNewline = false
            return true
        }
        guard let keyPath, !inRecords, depth <= keyPath.count, depth > 0 else { return true }
        let text = String(decoding: UnsafeBufferPointer(start: key, count: length), as: UTF8.self)
        if depth == 1 && topLevelKeys.count < 20 && !topLevelKeys.contains(text) { topLevelKeys.append(text) }
        keyStack[depth - 1] = text
        // A member on the way to the records given again after them would replace them
        // (the last of two equal members wins): refused as the whole path given twice is.
        if recordsFound, depth < keyPath.count, keyStack[..<depth].elementsEqual(keyPath[..<depth], by: { $0 == $1 }) {
            return fail(.keyPathRepeated, "key path '\(keyPathText)' occurs more than once in the feed ('\(keyPath[..<depth].joined(separator: "."))' is given again after the records)")
        }
        if depth == keyPath.count && keyStack.elementsEqual(keyPath, by: { $0 == $1 }) {
            if recordsFound {
                return fail(.keyPathRepeated, "key path '\(keyPathText)' occurs more than once in the feed")
            }
            expectingRecords = true
        }
        return true
    }

    private var keyPathText: String { keyPath?.joined(separator: ".") ?? "" }

    // MARK: - Errors

    private func fail(_ kind: FeedError.Kind, _ message: String, at index: Int? = nil) -> Bool {
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
