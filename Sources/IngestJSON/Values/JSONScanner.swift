#if canImport(Glibc)
import Glibc
#endif

/// Walks JSON text the splitter already validated: the steps the selective parse
/// (`JSONSelection`) and the capture scan (`JSONCapturePlan`) share. Every method
/// returns nil (or false) to hand the whole input back to the full parser: it never
/// decides an error itself.
struct JSONScanner {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var at = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    @inline(__always)
    mutating func skipSpace() { at = Self.spaceEnd(bytes, from: at) }

    /// The first index from `from` that is not JSON whitespace (or `bytes.count`).
    @inline(__always)
    static func spaceEnd(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int {
        var at = from
        // Chunk lines rarely hold whitespace: one test, then the loop.
        if at < bytes.count && bytes[at] > 0x20 { return at }
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x0A, 0x0D, 0x09: at += 1
            default: return at
            }
        }
        return at
    }

    /// After a member or item: true past the closing bracket, false past a comma, nil for
    /// anything else.
    /// At a member's key: the key's bytes, moving past the colon to the value; nil for an
    /// escaped key (left to the full parser) or anything but `"key":`.
    @inline(__always)
    mutating func memberKey() -> UnsafeRawBufferPointer? {
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let keyEnd = stringEnd(), !sawEscape else { return nil }
        let key = UnsafeRawBufferPointer(rebasing: bytes[(at + 1)..<keyEnd])
        at = keyEnd + 1
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { return nil }
        at += 1
        skipSpace()
        return at < bytes.count ? key : nil
    }

    @inline(__always)
    mutating func afterMember(closing: UInt8) -> Bool? {
        skipSpace()
        guard at < bytes.count else { return nil }
        switch bytes[at] {
        case UInt8(ascii: ","):
            at += 1
            skipSpace()
            return false
        case closing:
            at += 1
            return true
        default:
            return nil
        }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[at + offset] != word.utf8Start[offset] { return false }
        at += count
        return true
    }

    static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
             UInt8(ascii: "e"), UInt8(ascii: "E"): true
        default: false
        }
    }

    /// Set by `stringEnd()`: the string had a backslash escape.
    var sawEscape = false

    /// At `"`: the index of the closing quote, or nil for a lone surrogate escape or no
    /// end. Control characters are not looked for: the splitter's yajl refused any
    /// before the chunk was written, and the worker checks the chunk's checksum.
    mutating func stringEnd() -> Int? {
        sawEscape = false
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var index = at + 1
        while true {
            // Eight bytes at a time to the first quote or backslash (most strings are short:
            // two memchr calls per string cost more than the scan).
            while index + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let quote = word ^ 0x2222_2222_2222_2222
                let slash = word ^ 0x5C5C_5C5C_5C5C_5C5C
                let found = ((quote &- 0x0101_0101_0101_0101) & ~quote | (slash &- 0x0101_0101_0101_0101) & ~slash)
                    & 0x8080_8080_8080_8080
                if found != 0 {
                    index += found.trailingZeroBitCount / 8
                    break
                }
                index += 8
            }
            while index < count && bytes[index] != UInt8(ascii: "\"") && bytes[index] != UInt8(ascii: "\\") { index += 1 }
            guard index < count else { return nil }
            if bytes[index] == UInt8(ascii: "\\") {
                sawEscape = true
                index += 2
                continue
            }
            if sawEscape, JSONValueBuilder.loneSurrogate(in: UnsafeRawBufferPointer(rebasing: bytes[at..<index])) != nil {
                return nil
            }
            return index
        }
    }

    /// Moves past the value here, nesting no deeper than the limit. Brackets must pair
    /// (a bit per level says which is open); past 64 levels the full parser takes over.
    mutating func skipValue(depth: Int) -> Bool {
        // Scalars, the usual case, without the bracket bookkeeping.
        guard at < bytes.count else { return false }
        switch bytes[at] {
        case UInt8(ascii: "\""):
            guard let end = stringEnd() else { return false }
            at = end + 1
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            while at < bytes.count, Self.isNumberByte(bytes[at]) { at += 1 }
            return true
        default:
            break
        }
        var level = 0
        var objects: UInt64 = 0
        repeat {
            guard at < bytes.count else { return false }
            switch bytes[at] {
            case UInt8(ascii: "\""):
                guard let end = stringEnd() else { return false }
                at = end + 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard level < 64, depth + level + 1 <= maxDepth else { return false }
                if bytes[at] == UInt8(ascii: "{") { objects |= 1 << level } else { objects &= ~(1 << level) }
                level += 1
                at += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard level > 0, (objects >> (level - 1)) & 1 == (bytes[at] == UInt8(ascii: "}") ? 1 : 0) else { return false }
                level -= 1
                at += 1
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                guard literal("true") || literal("false") || literal("null") else { return false }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                while at < bytes.count, Self.isNumberByte(bytes[at]) { at += 1 }
            case UInt8(ascii: ","), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09:
                guard level > 0 else { return false }
                at += 1
            default:
                return false
            }
        } while level > 0
        return true
    }
}
