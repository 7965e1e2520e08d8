#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns byte offsets into lines, columns and excerpts while the input streams past
/// in buffers that are then forgotten. It remembers only the line count, the column
/// at the end of the input seen so far and a short tail, so its cost is a pass over
/// each buffer and its memory is constant.
struct PositionTracker {
    /// Line and column (in scalars already passed on that line) at the start of the current buffer.
    private(set) var line = 1
    private var scalarsIntoLine = 0
    /// The last bytes before the current buffer, for excerpts that straddle two buffers.
    private var tail: [UInt8] = []
    private static let excerptRadius = 32

    /// Accounts for a buffer once the parser is done with it.
    mutating func advance(over buffer: UnsafeRawBufferPointer) {
        let newlines = Self.countNewlines(buffer, upTo: buffer.count)
        if newlines.count > 0 {
            line += newlines.count
            scalarsIntoLine = Self.countScalars(buffer, from: newlines.lastIndex + 1, to: buffer.count)
        } else {
            scalarsIntoLine += Self.countScalars(buffer, from: 0, to: buffer.count)
        }
        let keep = Self.excerptRadius
        if buffer.count >= keep {
            tail = Array(buffer[(buffer.count - keep)...])
        } else {
            tail.append(contentsOf: buffer)
            if tail.count > keep { tail.removeFirst(tail.count - keep) }
        }
    }

    /// The last bytes of the input seen so far (up to 32).
    var lastBytes: [UInt8] { tail }

    /// The position of byte `index` of the current buffer. A small negative index
    /// names one of the last bytes of the buffers before (yajl can finish a token,
    /// and so report it, only once the next buffer has arrived).
    func position(at index: Int, in buffer: UnsafeRawBufferPointer, base: Int) -> SourcePosition {
        let index = min(max(index, -tail.count), buffer.count)
        if index < 0 {
            let between = tail[(tail.count + index)...]
            let linesBetween = between.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
            var column = 1
            if linesBetween == 0 {
                column = max(1, scalarsIntoLine - between.reduce(0) { $1 & 0xC0 != 0x80 ? $0 + 1 : $0 } + 1)
            } else if let lineStart = tail[..<(tail.count + index)].lastIndex(of: 0x0A) {
                column = tail[(lineStart + 1)..<(tail.count + index)].reduce(0) { $1 & 0xC0 != 0x80 ? $0 + 1 : $0 } + 1
            }
            return SourcePosition(byteOffset: base + index, line: line - linesBetween, column: column)
        }
        let newlines = Self.countNewlines(buffer, upTo: index)
        let column: Int
        if newlines.count > 0 {
            column = Self.countScalars(buffer, from: newlines.lastIndex + 1, to: index) + 1
        } else {
            column = scalarsIntoLine + Self.countScalars(buffer, from: 0, to: index) + 1
        }
        return SourcePosition(byteOffset: base + index, line: line + newlines.count, column: column)
    }

    /// The bytes just before `index` (up to 8, from this buffer and the ones before)
    /// and the index of the first of them, which may be negative.
    func bytes(before index: Int, in buffer: UnsafeRawBufferPointer) -> (bytes: [UInt8], start: Int) {
        let index = min(max(index, 0), buffer.count)
        var out = Array(buffer[max(0, index - 8)..<index])
        let fromTail = min(tail.count, 8 - out.count)
        if fromTail > 0 { out.insert(contentsOf: tail.suffix(fromTail), at: 0) }
        return (out, index - out.count)
    }

    /// A printable line of input around `index` and the caret's column inside it.
    func excerpt(at index: Int, in buffer: UnsafeRawBufferPointer) -> (text: String, caret: Int) {
        let radius = Self.excerptRadius
        let index = min(max(index, -tail.count), buffer.count)
        var before: [UInt8]
        var after: [UInt8]
        if index < 0 {
            before = Array(tail[..<(tail.count + index)])
            after = Array(tail[(tail.count + index)...]) + Array(buffer[0..<min(buffer.count, radius)])
        } else {
            before = Array(buffer[max(0, index - radius)..<index])
            if before.count < radius { before.insert(contentsOf: tail.suffix(radius - before.count), at: 0) }
            after = Array(buffer[index..<min(buffer.count, index + radius)])
        }
        // Cut the excerpt at line breaks: the lines around the error are noise.
        if let lastBreak = before.lastIndex(of: 0x0A) { before.removeSubrange(...lastBreak) }
        if let firstBreak = after.firstIndex(of: 0x0A) { after.removeSubrange(firstBreak...) }
        let head = Self.printable(before)
        return (head + Self.printable(after), head.count)
    }

    /// Escapes control characters and invalid UTF-8 so the excerpt is one readable line.
    static func printable(_ bytes: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            switch byte {
            case 0x09: out += "\\t"; i += 1
            case 0x0D: out += "\\r"; i += 1
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(byte)); i += 1
            case 0x80...:
                let length = UTF8Validation.sequenceLength(bytes, at: i)
                if length > 0 {
                    out += String(decoding: bytes[i..<(i + length)], as: UTF8.self)
                    i += length
                } else {
                    out += "\\x" + hex(byte); i += 1
                }
            default: out += "\\x" + hex(byte); i += 1
            }
        }
        return out
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    /// memchr-driven: this runs over every byte of the feed, so it must be cheap.
    private static func countNewlines(
        _ buffer: UnsafeRawBufferPointer, upTo end: Int
    ) -> (count: Int, lastIndex: Int) {
        guard let base = buffer.baseAddress, end > 0 else { return (0, -1) }
        var count = 0
        var last = -1
        var cursor = base
        let limit = base + end
        while cursor < limit, let hit = memchr(cursor, 0x0A, limit - cursor) {
            count += 1
            last = UnsafeRawPointer(hit) - base
            cursor = UnsafeRawPointer(hit) + 1
        }
        return (count, last)
    }

    private static func countScalars(_ buffer: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        guard start < end else { return 0 }
        var count = 0
        for i in start..<end where buffer[i] & 0xC0 != 0x80 { count += 1 }
        return count
    }
}

/// Strict UTF-8 checks (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
enum UTF8Validation {
    /// The length of the valid UTF-8 sequence starting at `index`, or 0 when it is invalid or cut short.
    static func sequenceLength<C: RandomAccessCollection>(_ bytes: C, at index: C.Index) -> Int
    where C.Element == UInt8, C.Index == Int {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return 0
        }
        guard index + length <= bytes.endIndex else { return 0 }
        let second = bytes[index + 1]
        guard second >= low && second <= high else { return 0 }
        for k in 2..<length where bytes[index + k] & 0xC0 != 0x80 { return 0 }
        return length
    }
}
