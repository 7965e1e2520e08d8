#if canImport(Glibc)
import Glibc
#endif

extension JSONCapturePlan {
    /// How `capture(_:memberEnds:into:log:maxDepth:)` went.
    package enum EndsCapture: UInt8, Sendable {
        /// Captured by the ends.
        case stepped
        /// Captured by the scan (the ends did not vouch for the record).
        case scanned
        /// Refused, as the scan refuses: the caller hands the record to the full parser.
        case refused

        // Compared once a record by the mapper in another module (see `JSONCapture.Kind`).
        @inlinable package static func == (a: EndsCapture, b: EndsCapture) -> Bool { a.rawValue == b.rawValue }
    }

    /// `capture(_:into:log:maxDepth:splitterChecked:)` for a chunk's record whose member
    /// ends the splitter's yajl pass found (`MemberEnds`, read by `MemberEndsReader`):
    /// the record's own members are stepped over by their ends. What is scanned still: the
    /// arrays and objects the plan reads, strings with an escape (or split across reads),
    /// and an array or object whose escapes may hold a lone surrogate. It gives exactly what the
    /// scan gives: whatever the ends cannot vouch for (an escaped or split key, a key twice,
    /// nesting deeper than the scan follows, an end that does not fit the bytes it points
    /// at or a record of another length) leaves the whole record to the scan.
    package func capture(_ record: UnsafeRawBufferPointer, memberEnds ends: RecordEnds,
                        into captures: UnsafeMutableBufferPointer<JSONCapture>,
                        log: UnsafeMutablePointer<CaptureLog>? = nil, maxDepth: Int = FeedOptions.defaultMaxDepth) -> EndsCapture {
        for index in 0..<slotCount { captures[index] = .absent }
        log?.pointee.count = 0
        var scanner = JSONScanner(bytes: record, maxDepth: maxDepth)
        let stepped = withExtendedLifetime(table) {
            scanner.captureMembers(table.view, ends: ends, into: captures, log: log)
        }
        if stepped { return .stepped }
        return capture(record, into: captures, log: log, maxDepth: maxDepth, splitterChecked: true) ? .scanned : .refused
    }
}

extension JSONScanner {
    /// The record's own object by its member ends: false when the ends do not vouch for
    /// every member (the caller then scans the record).
    // The position is a local, written back to `at` only around the scanner's own methods:
    // kept in `at` (a stored property of an inout self, across calls the optimiser cannot
    // see into) it was stored and reloaded for each step, about 60 instructions a member.
    mutating func captureMembers(_ plan: TableView, ends: RecordEnds,
                                 into captures: UnsafeMutableBufferPointer<JSONCapture>,
                                 log: UnsafeMutablePointer<CaptureLog>?) -> Bool {
        let count = bytes.count
        guard count > 1, count == ends.length, let base = bytes.baseAddress,
              base.load(as: UInt8.self) == UInt8(ascii: "{") else { return false }
        @inline(__always) func byte(_ offset: Int) -> UInt8 { base.load(fromByteOffset: offset, as: UInt8.self) }
        let bytes = self.bytes
        @inline(__always) func skipSpace(_ from: Int) -> Int { Self.spaceEnd(bytes, from: from) }
        var at = 1
        let node = JSONCapturePlan.root
        let first = Int(plan.first[node])
        var seen: UInt64 = 0
        var index = 0
        let total = ends.count
        while index < total {
            let (key, value) = (ends[index], ends[index + 1])
            index += 2
            // Not plain: an escaped key, or one yajl saw across two reads.
            guard key.plain else { return false }
            let keyEnd = key.offset, valueEnd = value.offset
            at = skipSpace(at)
            guard at < keyEnd - 1, keyEnd < valueEnd, valueEnd <= count, byte(at) == UInt8(ascii: "\""),
                  byte(keyEnd - 1) == UInt8(ascii: "\"")
            else { return false }
            let name = UnsafeRawBufferPointer(start: base + at + 1, count: keyEnd - 2 - at)
            at = skipSpace(keyEnd)
            guard at < valueEnd, byte(at) == UInt8(ascii: ":") else { return false }
            at = skipSpace(at + 1)
            guard at < valueEnd else { return false }
            let found = plan.entry(node, name)
            let slot = found.map { Int(plan.slot[first + $0]) } ?? -2
            if let entry = found, slot >= -1 {
                guard entry < 64, seen & (1 << entry) == 0 else { return false }
                seen |= 1 << entry
                var kind = JSONCapture.Kind(firstByte: byte(at))
                let child = Int(plan.child[first + entry])
                if kind == .object && child >= 0 {
                    self.at = at
                    guard captureObject(plan, node: child, depth: 2, into: captures, log: log), self.at == valueEnd else { return false }
                } else if kind == .object || kind == .array {
                    // Kept whole (its text is read to be stored anyway): scanned, so that its
                    // end is the scan's own.
                    self.at = at
                    guard skipValue(depth: 1), self.at == valueEnd else { return false }
                } else {
                    switch stepOver(value, from: at, endingAt: valueEnd) {
                    case .refused: return false
                    case .escaped: if kind == .string { kind = .escapedString }
                    case .stepped: break
                    }
                }
                if slot >= 0 { captures[slot] = JSONCapture(kind, from: at, to: valueEnd) }
            } else {
                log?.pointee.note(node: node, key: name.baseAddress! - base, count: name.count,
                                  counter: found == nil ? -1 : Int32(-2 - slot))
                guard stepOver(value, from: at, endingAt: valueEnd) != .refused else { return false }
            }
            at = skipSpace(valueEnd)
            guard at < count else { return false }
            let expected = index < total ? UInt8(ascii: ",") : UInt8(ascii: "}")
            guard byte(at) == expected else { return false }
            at += 1
        }
        if total == 0 {
            at = skipSpace(at)
            guard at < count, byte(at) == UInt8(ascii: "}") else { return false }
            at += 1
        }
        at = skipSpace(at)
        self.at = at
        return at == count
    }

    /// Whether the text from `from` to `end` holds a `\uD…` escape (the start of a surrogate).
    @inline(__always)
    private func mayHoldSurrogateEscape(from start: Int, before end: Int) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        var index = start
        while index < end, let found = memchr(base + index, Int32(UInt8(ascii: "\\")), end - index) {
            let slash = UnsafeRawPointer(found) - base
            if slash + 2 < end, bytes[slash + 1] == UInt8(ascii: "u"), bytes[slash + 2] | 0x20 == UInt8(ascii: "d") { return true }
            // Past the escaped character, so that `\\u` is not taken for an escape.
            index = slash + 2
        }
        return false
    }

    /// How `stepOver` went.
    private enum Step { case stepped, escaped, refused }

    /// From a member's value at `start` to its end. An escaped string (or one that crossed a
    /// read) is scanned as the scan would, lone surrogates included, and so is an array or
    /// object with such a string inside that may be one; the rest is stepped over. `.escaped`:
    /// a string with an escape.
    @inline(__always)
    private mutating func stepOver(_ value: (offset: Int, plain: Bool), from start: Int, endingAt valueEnd: Int) -> Step {
        // The value's last byte must be one its first allows: ends out of step with the
        // record are found here (a safeguard for the file this process wrote, not a proof).
        let last = bytes[valueEnd - 1]
        let first = bytes[start]
        switch first {
        case UInt8(ascii: "\""):
            guard valueEnd - start >= 2, last == UInt8(ascii: "\"") else { return .refused }
            if !value.plain {
                at = start
                guard let end = stringEnd(), end == valueEnd - 1 else { return .refused }
                return sawEscape ? .escaped : .stepped
            }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // An array or object the plan does not read: its end is taken on trust, past this.
            guard last == first + 2 else { return .refused }  // `}` and `]` follow `{` and `[` by two
            // Of what the scan refuses in valid JSON, only a lone surrogate can be in there:
            // escapes are looked for (a memchr), and the value scanned when one may be that.
            if !value.plain, mayHoldSurrogateEscape(from: start, before: valueEnd) {
                at = start
                guard skipValue(depth: 1), at == valueEnd else { return .refused }
            }
        case UInt8(ascii: "t"), UInt8(ascii: "n"):
            guard valueEnd - start == 4, last == UInt8(ascii: "e") || last == UInt8(ascii: "l") else { return .refused }
        case UInt8(ascii: "f"):
            guard valueEnd - start == 5, last == UInt8(ascii: "e") else { return .refused }
        default:
            guard last >= UInt8(ascii: "0"), last <= UInt8(ascii: "9") else { return .refused }
        }
        return .stepped
    }
}
