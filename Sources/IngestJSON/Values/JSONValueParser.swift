import CYajl

extension JSONValue {
    /// Parses one complete JSON value (a record, a line of a chunk file).
    ///
    /// Strings are decoded (escapes, surrogate pairs). A lone surrogate escape such as
    /// `\uD800` is rejected rather than replaced: it names no character, and turning it
    /// into `?` or U+FFFD would change the data without saying so.
    /// - Throws: `FeedError` naming the byte offset, line and column of the problem.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = FeedOptions.defaultMaxDepth) throws -> JSONValue {
        let builder = JSONValueBuilder(input: bytes, maxDepth: min(maxDepth, maxHeldDepth))
        return try builder.run()
    }

    /// The deepest value held whole, whatever depth a feed allows: a value's walks (and its
    /// release) recurse once a level, and about 20,000 levels overflowed a thread's 8 MiB
    /// stack (`infer --max-depth 100000` crashed on such a record). A feed split with a
    /// higher `--max-depth` streams deeper records; holding one whole fails with the limit.
    public static let maxHeldDepth = 4096

    /// Parses one complete JSON value from its text.
    /// - Throws: `FeedError`, as `parse(_:maxDepth:)`.
    public static func parse(_ text: some Collection<UInt8>, maxDepth: Int = FeedOptions.defaultMaxDepth) throws -> JSONValue {
        try Array(text).withUnsafeBytes { try parse($0, maxDepth: maxDepth) }
    }

    /// Parses one complete JSON value from a string.
    /// - Throws: `FeedError`, as `parse(_:maxDepth:)`.
    public static func parse(_ text: String) throws -> JSONValue {
        try parse(Array(text.utf8))
    }
}

/// Builds a `JSONValue` from yajl's events for an input held whole in memory.
final class JSONValueBuilder {
    private enum Frame {
        case array([JSONValue])
        case object([JSONMember], key: String)
    }

    private let input: UnsafeRawBufferPointer
    private let maxDepth: Int
    private var stack: [Frame] = []
    private var result: JSONValue?
    /// Offset just past the previous token: a string token's raw text runs from here
    /// (after separators) to the current offset.
    private var lastTokenEnd = 0
    private var failure: FeedError?
    private var handle: yajl_handle!
    private let callbacks: UnsafeMutablePointer<yajl_callbacks>

    init(input: UnsafeRawBufferPointer, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: Self.callbackTable)
        handle = yajl_alloc(callbacks, nil, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        yajl_free(handle)
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
    }

    func run() throws -> JSONValue {
        var status = yajl_status_ok
        if input.count > 0 {
            inInput = true
            status = yajl_parse(handle, input.baseAddress!.assumingMemoryBound(to: UInt8.self), input.count)
            inInput = false
        }
        var atEnd = false
        if status == yajl_status_ok {
            status = yajl_complete_parse(handle)
            atEnd = true
        }
        if let failure { throw failure }
        guard status == yajl_status_ok, let result else {
            let message = input.count == 0 ? "empty input" : yajlErrorMessage(handle)
            // Completing, yajl reads a space of its own: its count is of that, not the input.
            let at = atEnd ? input.count : min(Int(yajl_get_bytes_consumed(handle)), input.count)
            throw error(.malformedJSON, "malformed JSON: \(message)", at: at)
        }
        // yajl takes a string begun after the value and never closed (`{} "abc`) for a
        // token still to come, and finishes without a word.
        if let end = resultEnd, let junk = input[end...].firstIndex(where: { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }) {
            throw error(.trailingContent, "malformed JSON: unexpected content after the end of the value", at: junk)
        }
        return result
    }

    /// Whether yajl is reading `input` (not the space its completion feeds it).
    private var inInput = false
    /// Where the whole value ended in `input`, when it ended there (a number at the very
    /// end completes only when the parse does).
    private var resultEnd: Int?

    private var currentIndex: Int { min(Int(yajl_get_bytes_consumed(handle)), input.count) }

    private func add(_ value: JSONValue) -> Bool {
        lastTokenEnd = currentIndex
        switch stack.popLast() {
        case nil:
            result = value
            if inInput { resultEnd = currentIndex }
        case .array(var items)?:
            items.append(value)
            stack.append(.array(items))
        case .object(var members, let key)?:
            members.append(JSONMember(key, value))
            stack.append(.object(members, key: key))
        }
        return true
    }

    private func open(_ frame: Frame) -> Bool {
        lastTokenEnd = currentIndex
        guard stack.count < maxDepth else {
            failure = error(.depthLimitExceeded, "the value nests deeper than the limit of \(maxDepth) levels", at: currentIndex - 1)
            return false
        }
        stack.append(frame)
        return true
    }

    private func close() -> Bool {
        switch stack.popLast() {
        case .array(let items)?: return add(.array(items))
        case .object(let members, _)?: return add(.object(members))
        case nil: return false
        }
    }

    private func key(_ bytes: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
        guard let text = decodedString(bytes, length) else { return false }
        lastTokenEnd = currentIndex
        if case .object(let members, _)? = stack.popLast() {
            stack.append(.object(members, key: text))
        }
        return true
    }

    private func string(_ bytes: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
        guard let text = decodedString(bytes, length) else { return false }
        return add(.string(text))
    }

    /// yajl mangles lone surrogate escapes (`\uD800` becomes '?', `\uD83D\u0041` a wrong
    /// character), so a string that had escapes is checked in its raw form and a lone
    /// surrogate refused. yajl hands out strings without escapes in place, inside the
    /// input: those need no check.
    private func decodedString(_ bytes: UnsafePointer<UInt8>?, _ length: Int) -> String? {
        let decoded = UnsafeBufferPointer(start: bytes, count: length)
        let inPlace = bytes.map { pointer in
            input.baseAddress.map { UnsafeRawPointer(pointer) >= $0 && UnsafeRawPointer(pointer) < $0 + input.count } ?? false
        } ?? true
        if !inPlace {
            let end = currentIndex
            var start = lastTokenEnd
            while start < end, input[start] != UInt8(ascii: "\"") { start += 1 }
            if let lone = Self.loneSurrogate(in: UnsafeRawBufferPointer(rebasing: input[start..<end])) {
                failure = error(.invalidUTF8,
                    "lone surrogate escape \\u\(lone) in a string (it names no character; Ingest rejects it rather than replace it)",
                    at: start)
                return nil
            }
        }
        // yajl checks UTF-8 but lets overlong forms (C0 80 for NUL) and encoded surrogates
        // through; Swift's validation refuses them, so they are named, never replaced.
        guard let text = String(validating: decoded, as: UTF8.self) else {
            var start = lastTokenEnd
            while start < currentIndex, input[start] != UInt8(ascii: "\"") { start += 1 }
            failure = error(.invalidUTF8, "invalid UTF-8 in a string (an overlong or surrogate encoding)", at: start)
            return nil
        }
        return text
    }

    /// The hex digits of the first `\uD800`–`\uDFFF` escape not part of a valid pair.
    static func loneSurrogate(in raw: UnsafeRawBufferPointer) -> String? {
        func hexValue(at i: Int) -> UInt32? {
            guard i + 6 <= raw.count, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u") else { return nil }
            return UInt32(String(decoding: raw[(i + 2)..<(i + 6)], as: UTF8.self), radix: 16)
        }
        var i = 0
        while i < raw.count {
            guard raw[i] == UInt8(ascii: "\\") else { i += 1; continue }
            guard let unit = hexValue(at: i) else { i += 2; continue }
            let text = String(decoding: raw[(i + 2)..<(i + 6)], as: UTF8.self)
            if (0xD800...0xDBFF).contains(unit) {
                if let low = hexValue(at: i + 6), (0xDC00...0xDFFF).contains(low) {
                    i += 12
                    continue
                }
                return text
            }
            if (0xDC00...0xDFFF).contains(unit) { return text }
            i += 6
        }
        return nil
    }

    private func error(_ kind: FeedError.Kind, _ message: String, at index: Int) -> FeedError {
        let tracker = PositionTracker()
        let index = max(0, min(index, input.count))
        let excerpt = tracker.excerpt(at: index, in: input)
        return FeedError(kind, message, at: tracker.position(at: index, in: input, base: 0),
                         excerpt: excerpt.text, caret: excerpt.caret, source: "")
    }

    private static func builder(_ context: UnsafeMutableRawPointer?) -> JSONValueBuilder {
        Unmanaged<JSONValueBuilder>.fromOpaque(context!).takeUnretainedValue()
    }

    private static let callbackTable = yajl_callbacks(
        yajl_null: { builder($0).add(.null) ? 1 : 0 },
        yajl_boolean: { context, flag in builder(context).add(.bool(flag != 0)) ? 1 : 0 },
        yajl_integer: nil,
        yajl_double: nil,
        yajl_number: { context, text, length in
            let bytes = UnsafeRawBufferPointer(start: text, count: length)
            return builder(context).add(.number(String(decoding: bytes, as: UTF8.self))) ? 1 : 0
        },
        yajl_string: { context, text, length in builder(context).string(text, length) ? 1 : 0 },
        yajl_start_map: { builder($0).open(.object([], key: "")) ? 1 : 0 },
        yajl_map_key: { context, text, length in builder(context).key(text, length) ? 1 : 0 },
        yajl_end_map: { builder($0).close() ? 1 : 0 },
        yajl_start_array: { builder($0).open(.array([])) ? 1 : 0 },
        yajl_end_array: { builder($0).close() ? 1 : 0 }
    )
}
