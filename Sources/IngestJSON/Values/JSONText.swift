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
        var out: [UInt8] = []
        out.reserveCapacity(contents.count)
        var index = 0
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
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
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
                    out.append(contentsOf: encoded)
                default:
                    return nil
                }
                continue
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\"") else { return nil }
            out.append(byte)
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }
}
