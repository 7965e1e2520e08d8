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
}
