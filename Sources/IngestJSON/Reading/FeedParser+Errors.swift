import CYajl

// How the reader words what it finds wrong, and finds where: yajl's messages made into
// ones that say what is wrong with the feed, and the raw text of a keyed record's name.
extension FeedParser {
    /// Turns yajl's terse messages into ones that say what is wrong with the feed.
    func translate(_ yajlMessage: String, at index: Int, atEnd: Bool) -> FeedError {
        if atEnd, depth == 0, let end = topLevelEnd {
            // The token after the end is at the end of the input: find its first byte in the tail.
            let tail = tracker.lastBytes
            var offset = max(end, bufferBase - tail.count)
            while offset < bufferBase, [0x20, 0x0A, 0x0D, 0x09].contains(tail[tail.count - (bufferBase - offset)]) { offset += 1 }
            return error(.trailingContent, "unexpected content after the end of the top-level value", at: offset - bufferBase)
        }
        if atEnd || yajlMessage.contains("premature EOF") {
            let what: String
            if inRecords && depth > recordsDepth {
                what = "inside record \(recordCount + 1)"
            } else if options.shape == .ndjson {
                what = "inside a value"
            } else if inRecords {
                what = keyed ? "before the object of records is closed" : "before the records array is closed"
            } else if recordsFound {
                what = "before the top-level value is closed"
            } else {
                what = keyed ? "before the object of records is closed" : "before the records array is closed"
            }
            return error(.truncated, "truncated input: the feed ends \(what)", at: index)
        }
        if yajlMessage.contains("trailing garbage") {
            return error(.trailingContent, "unexpected content after the end of the top-level value", at: index)
        }
        if yajlMessage.contains("invalid string in json text"), let literal = literalStart(at: index) {
            // yajl's words for `tru}` or `nul`: a literal cut short or misspelt, located at its
            // first letter (found by probing: it named a letter inside it, as a string).
            return error(.malformedJSON, "malformed JSON: invalid literal (JSON's literals are true, false and null)", at: literal)
        }
        if yajlMessage.contains("invalid bytes in UTF8 string") {
            return error(.invalidUTF8, "invalid UTF-8 inside a string", at: firstInvalidUTF8(before: index + 1) ?? index)
        }
        if yajlMessage.contains("invalid char in json text"), let invalid = firstInvalidUTF8(before: index + 1) {
            return error(.invalidUTF8, "invalid UTF-8 byte outside a string", at: invalid)
        }
        if yajlMessage.contains("invalid char in json text"), index < buffer.count, buffer[index] >= 0x80 {
            return error(.malformedJSON, "malformed JSON: a character outside a string where JSON allows only whitespace, brackets, commas, colons and values", at: index)
        }
        return error(.malformedJSON, "malformed JSON: \(yajlMessage)", at: index)
    }

    /// Where the token yajl refused for JSON's grammar begins, as an index into the current
    /// buffer (negative for the reads before), or nil where that cannot be told here.
    /// `lastByte` is where yajl stopped, a byte back.
    func misplacedToken(lastByte: Int) -> Int? {
        guard inRecords, refusal == nil else { return nil }
        let start = recordStart()
        if depth == recordsDepth {
            // Between records the refused token is the next record's first: where the next
            // record would begin, unless it is a bracket, comma or colon (yajl locates those right).
            guard !keyed, lastByte >= 0, lastByte < buffer.count, !"{}[],:".utf8.contains(buffer[lastByte]),
                  start - bufferBase >= -tracker.lastBytes.count else { return nil }
            return start - bufferBase
        }
        // Inside a record: its tokens from its first byte (carried over, and in this read).
        let offset: Int?
        if pending.isEmpty {
            guard start >= bufferBase, start <= bufferBase + buffer.count else { return nil }
            offset = MisplacedToken.offset(in: UnsafeRawBufferPointer(rebasing: buffer[(start - bufferBase)...]))
        } else {
            offset = (pending + buffer).withUnsafeBytes { MisplacedToken.offset(in: $0) }
        }
        // Further back than the tracker remembers (a long token begun in an earlier read): yajl's place.
        guard let offset, start + offset - bufferBase >= -tracker.lastBytes.count else { return nil }
        return start + offset - bufferBase
    }

    /// The first letter of the run of letters that ends at `index` (or just before it), or nil.
    func literalStart(at index: Int) -> Int? {
        let (bytes, start) = tracker.bytes(before: min(index + 1, buffer.count), in: buffer)
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
        var end = bytes.count
        while end > 0, !isLetter(bytes[end - 1]), end > bytes.count - 2 { end -= 1 }
        var first = end
        while first > 0, isLetter(bytes[first - 1]) { first -= 1 }
        return first < end ? start + first : nil
    }

    /// yajl stops a byte or two past an invalid UTF-8 sequence; find where it began.
    func firstInvalidUTF8(before index: Int) -> Int? {
        var (bytes, start) = tracker.bytes(before: index, in: buffer)
        let judged = bytes.count
        // yajl stops a byte into a character it refuses outside a string (U+2028, say):
        // the rest of it, where this read holds it, decides whether it is valid UTF-8.
        if index >= 0, index < buffer.count { bytes += buffer[index..<min(index + 3, buffer.count)] }
        var i = 0
        // Continuation bytes at the start of the window belong to a character before it.
        while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
        while i < judged {
            if bytes[i] < 0x80 { i += 1; continue }
            let length = UTF8Validation.sequenceLength(bytes, at: i)
            if length == 0 { return start + i }
            i += length
        }
        return nil
    }

    /// The string token (quotes included) that `earlier + bytes` end with, or nil. Only a
    /// name that began in an earlier read needs `earlier`: the copy is made then alone.
    static func lastString(in bytes: UnsafeRawBufferPointer, after earlier: [UInt8]? = nil) -> [UInt8]? {
        guard let earlier else { return lastString(in: bytes) }
        let whole = earlier + bytes
        return whole.withUnsafeBytes { lastString(in: $0) }
    }

    private static func lastString(in bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard bytes.count >= 2, bytes[bytes.count - 1] == UInt8(ascii: "\"") else { return nil }
        var index = bytes.count - 2
        while index >= 0 {
            if bytes[index] == UInt8(ascii: "\"") {
                var slashes = 0
                while index - slashes - 1 >= 0, bytes[index - slashes - 1] == UInt8(ascii: "\\") { slashes += 1 }
                if slashes % 2 == 0 { return Array(bytes[index...]) }
            }
            index -= 1
        }
        return nil
    }
    /// The current key of every open object (nil for arrays) while outside the records.
}
