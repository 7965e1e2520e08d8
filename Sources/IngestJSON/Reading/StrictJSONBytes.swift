import CYajl

/// What yajl lets through that RFC 8259 forbids, caught before yajl sees the bytes (found
/// by probing yajl 2.1 with every case; see the tests):
///
/// - form feed (0x0C) and vertical tab (0x0B), which yajl takes as whitespace (JSON's is
///   space, tab, line feed and carriage return only; inside strings yajl already refuses them);
/// - UTF-8 that is well formed in shape but not in value, which yajl's string check
///   accepts: overlong forms (`C0 80`, `E0 80 80`, `F0 80 80 80`), UTF-16 surrogates
///   encoded in UTF-8 (`ED A0 80`), and code points above U+10FFFF (`F4 90 80 80`, `F5`…`F7`).
///
/// Other invalid UTF-8 (a stray continuation byte, a cut sequence, `F8`…`FF`) yajl
/// refuses itself, and its error is kept. A lone surrogate escape (`"\uD800"`) is allowed
/// by RFC 8259's grammar; the importer rejects such a record with its reason.
struct StrictJSONBytes {
    /// A lead byte at the end of the previous block, whose next byte decides.
    private var pendingLead: UInt8?

    /// The first forbidden byte in `block`, the kind of error it makes and why, or nil.
    mutating func check(_ block: UnsafeRawBufferPointer) -> (index: Int, kind: FeedError.Kind, message: String)? {
        var index = 0
        let count = block.count
        if let lead = pendingLead, count > 0 {
            pendingLead = nil
            if let message = Self.problem(lead: lead, next: block[0]) { return (0, .invalidUTF8, message) }
        }
        guard let base = block.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        while index < count {
            // Straight to the next byte that needs a look: continuation bytes (0x80...0xBF)
            // are checked with their lead, and JSON's own control bytes by yajl.
            index = cyajl_strict_next(base, index, count)
            guard index < count else { break }
            let byte = block[index]
            if byte == 0x0B || byte == 0x0C {
                return (index, .malformedJSON, "\(byte == 0x0C ? "a form feed (0x0C)" : "a vertical tab (0x0B)") is not JSON whitespace or text (RFC 8259 allows space, tab, line feed and carriage return)")
            }
            if byte >= 0xC0 {
                guard index + 1 < count else {
                    pendingLead = byte
                    return nil
                }
                if let message = Self.problem(lead: byte, next: block[index + 1]) { return (index, .invalidUTF8, message) }
            }
            index += 1
        }
        return nil
    }

    /// Why the sequence starting `lead, next` is forbidden UTF-8, or nil.
    static func problem(lead: UInt8, next: UInt8) -> String? {
        // Without a continuation byte the form is not one of these: yajl reports it
        // ("invalid UTF-8 inside a string"), not as an overlong or surrogate form.
        guard next & 0xC0 == 0x80 else { return nil }
        switch lead {
        case 0xC0, 0xC1: return "invalid UTF-8: an overlong encoding (\(hex(lead)) \(hex(next)))"
        case 0xE0 where next < 0xA0: return "invalid UTF-8: an overlong encoding (\(hex(lead)) \(hex(next)) …)"
        case 0xF0 where next < 0x90: return "invalid UTF-8: an overlong encoding (\(hex(lead)) \(hex(next)) …)"
        case 0xED where next >= 0xA0: return "invalid UTF-8: a UTF-16 surrogate encoded as UTF-8 (\(hex(lead)) \(hex(next)) …)"
        case 0xF4 where next >= 0x90, 0xF5...0xF7: return "invalid UTF-8: a code point above U+10FFFF (\(hex(lead)) \(hex(next)) …)"
        default: return nil
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}
