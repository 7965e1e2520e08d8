#if canImport(Glibc)
import Glibc
#endif

extension JSONCapturePlan {
    /// `capture(_:into:log:maxDepth:splitterChecked:)` for a chunk's record whose member
    /// ends the splitter's yajl pass found (`MemberEnds`, read by `MemberEndsReader`):
    /// the record's own members are stepped over by their ends, and only the objects the
    /// plan reads into are scanned. It gives exactly what the scan gives: whatever the ends
    /// cannot vouch for (an escaped or split key, a key twice, an end that does not fit the
    /// bytes it points at) is left to the scan.
    public func capture(_ record: UnsafeRawBufferPointer, memberEnds ends: RecordEnds,
                        into captures: UnsafeMutableBufferPointer<JSONCapture>,
                        log: UnsafeMutablePointer<CaptureLog>? = nil, maxDepth: Int = FeedOptions.defaultMaxDepth) -> Bool {
        for index in 0..<slotCount { captures[index] = .absent }
        log?.pointee.count = 0
        var scanner = JSONScanner(bytes: record, maxDepth: maxDepth)
        let stepped = withExtendedLifetime(table) {
            scanner.captureMembers(table.view, ends: ends, into: captures, log: log)
        }
        if stepped { return true }
        return capture(record, into: captures, log: log, maxDepth: maxDepth, splitterChecked: true)
    }
}

extension JSONScanner {
    /// The record's own object by its member ends: false when the ends do not vouch for
    /// every member (the caller then scans the record).
    mutating func captureMembers(_ plan: TableView, ends: RecordEnds,
                                 into captures: UnsafeMutableBufferPointer<JSONCapture>,
                                 log: UnsafeMutablePointer<CaptureLog>?) -> Bool {
        let count = bytes.count
        guard count > 1, count == ends.length, bytes[0] == UInt8(ascii: "{") else { return false }
        at = 1
        let node = JSONCapturePlan.root
        let first = Int(plan.first[node])
        var seen: UInt64 = 0
        var index = 0
        while index < ends.count {
            let (key, value) = (ends[index], ends[index + 1])
            index += 2
            // Not plain: an escaped key, or one yajl saw across two reads.
            guard key.plain else { return false }
            let keyEnd = key.offset, valueEnd = value.offset
            skipSpace()
            guard at < keyEnd - 1, keyEnd < valueEnd, valueEnd <= count, bytes[at] == UInt8(ascii: "\""),
                  bytes[keyEnd - 1] == UInt8(ascii: "\"")
            else { return false }
            let name = UnsafeRawBufferPointer(rebasing: bytes[(at + 1)..<(keyEnd - 1)])
            at = keyEnd
            skipSpace()
            guard at < valueEnd, bytes[at] == UInt8(ascii: ":") else { return false }
            at += 1
            skipSpace()
            guard at < valueEnd else { return false }
            let found = plan.entry(node, name)
            let slot = found.map { Int(plan.slot[first + $0]) } ?? -2
            if let entry = found, slot >= -1 {
                guard entry < 64, seen & (1 << entry) == 0 else { return false }
                seen |= 1 << entry
                let start = at
                var kind = JSONCapture.Kind(firstByte: bytes[at])
                let child = Int(plan.child[first + entry])
                if kind == .object && child >= 0 {
                    guard captureObject(plan, node: child, depth: 2, into: captures, log: log), at == valueEnd else { return false }
                } else {
                    guard stepOver(value, endingAt: valueEnd) else { return false }
                    if kind == .string && sawEscape { kind = .escapedString }
                }
                if slot >= 0 { captures[slot] = JSONCapture(kind, from: start, to: at) }
            } else {
                log?.pointee.note(node: node, key: name.baseAddress! - bytes.baseAddress!, count: name.count,
                                  counter: found == nil ? -1 : Int32(-2 - slot))
                guard stepOver(value, endingAt: valueEnd) else { return false }
            }
            skipSpace()
            guard at < count else { return false }
            let expected = index < ends.count ? UInt8(ascii: ",") : UInt8(ascii: "}")
            guard bytes[at] == expected else { return false }
            at += 1
        }
        if ends.count == 0 {
            skipSpace()
            guard at < count, bytes[at] == UInt8(ascii: "}") else { return false }
            at += 1
        }
        skipSpace()
        return at == count
    }

    /// Whether the text from here to `end` holds a `\uD…` escape (the start of a surrogate).
    @inline(__always)
    private func mayHoldSurrogateEscape(before end: Int) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        var index = at
        while index < end, let found = memchr(base + index, Int32(UInt8(ascii: "\\")), end - index) {
            let slash = UnsafeRawPointer(found) - base
            if slash + 2 < end, bytes[slash + 1] == UInt8(ascii: "u"), bytes[slash + 2] | 0x20 == UInt8(ascii: "d") { return true }
            // Past the escaped character, so that `\\u` is not taken for an escape.
            index = slash + 2
        }
        return false
    }

    /// From a member's value to its end. An escaped string (or one that crossed a read) is
    /// scanned as the scan would, lone surrogates included, and so is an array or object
    /// with such a string inside that may be one; the rest is stepped over. Sets
    /// `sawEscape` for a string.
    @inline(__always)
    private mutating func stepOver(_ value: (offset: Int, plain: Bool), endingAt valueEnd: Int) -> Bool {
        sawEscape = false
        switch bytes[at] {
        case UInt8(ascii: "\""):
            guard bytes[valueEnd - 1] == UInt8(ascii: "\"") else { return false }
            if !value.plain {
                guard let end = stringEnd(), end == valueEnd - 1 else { return false }
            }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // Of what the scan refuses in valid JSON, only a lone surrogate can be in there:
            // escapes are looked for (a memchr), and the value scanned when one may be that.
            if !value.plain, mayHoldSurrogateEscape(before: valueEnd) {
                guard skipValue(depth: 1), at == valueEnd else { return false }
            }
        default:
            break
        }
        at = valueEnd
        return true
    }
}
