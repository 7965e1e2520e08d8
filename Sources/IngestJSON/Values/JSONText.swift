#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte-level helpers for JSON text that is already known to be well formed.
package enum JSONText {
    /// Removes whitespace outside strings, so a record written across several lines
    /// fits on one line of a chunk file. Strings, numbers and member order are left
    /// exactly as they were: no value is re-serialized.
    package static func compacted(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                out.append(byte)
            } else {
                switch byte {
                case 0x20, 0x09, 0x0A, 0x0D: continue
                case UInt8(ascii: "\""): inString = true; out.append(byte)
                default: out.append(byte)
                }
            }
        }
        return out
    }

    /// Whether the text holds a line break, which a one-record-per-line chunk cannot.
    package static func containsLineBreak(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return false }
        return memchr(base, 0x0A, bytes.count) != nil || memchr(base, 0x0D, bytes.count) != nil
    }

    /// The text of a JSON string's contents (between its quotes) with its escapes decoded,
    /// or nil for anything a JSON string may not hold: a raw control byte or quote, an unknown or
    /// cut escape, a surrogate escape that is not half of a pair (which the full parser
    /// rejects with its reason), or UTF-8 Swift refuses.
    // Not `JSONValue.parse` of the quoted string: it sets up a yajl parser per string,
    // about 7,000 instructions where this takes a few per byte (a quarter of a realistic
    // feed's records carry an escaped string).
    package static func unescaped(_ contents: UnsafeRawBufferPointer) -> String? {
        let count = contents.count
        guard count > 0 else { return "" }
        // Decoding only shortens the text (`\uXXXX` is at most three bytes of UTF-8, a
        // pair of them four): the result fits in the input's size, written through a
        // pointer (an array's append checks its uniqueness and capacity per byte).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { out -> String? in
            guard let written = decode(contents, into: out.baseAddress!) else { return nil }
            return String(validating: UnsafeBufferPointer(rebasing: out[0..<written]), as: UTF8.self)
        }
    }

    /// `unescaped`'s decoding into `out` (room for `contents.count` bytes): the bytes
    /// written, or nil for what a JSON string may not hold.
    private static func decode(_ contents: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) -> Int? {
        var index = 0
        var written = 0
        let count = contents.count
        func hex(at position: Int) -> UInt32? {
            guard position + 4 <= count else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                let byte = contents[position + offset]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: return nil
                }
                value = value << 4 | digit
            }
            return value
        }
        while index < count {
            let byte = contents[index]
            guard byte != UInt8(ascii: "\\") else {
                guard index + 1 < count else { return nil }
                let escape = contents[index + 1]
                index += 2
                let decoded: UInt8
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded = escape
                case UInt8(ascii: "b"): decoded = 0x08
                case UInt8(ascii: "f"): decoded = 0x0C
                case UInt8(ascii: "n"): decoded = 0x0A
                case UInt8(ascii: "r"): decoded = 0x0D
                case UInt8(ascii: "t"): decoded = 0x09
                case UInt8(ascii: "u"):
                    guard var scalar = hex(at: index) else { return nil }
                    index += 4
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 6 <= count, contents[index] == UInt8(ascii: "\\"), contents[index + 1] == UInt8(ascii: "u"),
                              let low = hex(at: index + 2), (0xDC00...0xDFFF).contains(low) else { return nil }
                        index += 6
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        return nil
                    }
                    guard let character = Unicode.Scalar(scalar), let encoded = Unicode.UTF8.encode(character) else { return nil }
                    for unit in encoded {
                        out[written] = unit
                        written += 1
                    }
                    continue
                default:
                    return nil
                }
                out[written] = decoded
                written += 1
                continue
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\"") else { return nil }
            out[written] = byte
            written += 1
            index += 1
        }
        return written
    }
}
