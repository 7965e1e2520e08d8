extension JSONText {
    /// The length of the compact text `JSONValue.parse(bytes).description` gives for one
    /// object or array, judged from the bytes alone: equal to `bytes.count` when the value
    /// is already compact, and its bytes are then that text exactly. Nil when the value
    /// holds anything that text would not keep byte for byte or that only the full parser
    /// judges: a backslash or a byte of 0x80 or more in a string, a control character, a
    /// malformed number, literal or structure, or more than `maxDepth` levels. The caller
    /// then parses the value; the answer is the same, slower.
    ///
    /// A column mapped with `"json": true` holds such text for every record: parsing each
    /// value into a tree and writing it out again took about 15,000 instructions a record
    /// of a feed's short tag arrays.
    package static func compactLength(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) -> Int? {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
        var validator = CompactValidator(base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: maxDepth)
        guard validator.value(depth: 0) else { return nil }
        validator.skipSpace()
        guard validator.index == validator.count else { return nil }
        return validator.kept
    }
}

/// A recursive-descent check of RFC 8259's grammar over bytes that may only take the
/// fast path (see `compactLength`), counting the bytes the compact text keeps.
private struct CompactValidator {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var index = 0
    var kept = 0

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
    }

    mutating func skipSpace() {
        while index < count {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` (after any whitespace) when it comes next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < count, base[index] == byte else { return false }
        index += 1
        kept += 1
        return true
    }

    mutating func value(depth: Int) -> Bool {
        skipSpace()
        guard index < count else { return false }
        switch base[index] {
        case UInt8(ascii: "{"):
            return container(depth: depth, close: UInt8(ascii: "}")) { validator in
                validator.skipSpace()
                return validator.string() && validator.take(UInt8(ascii: ":")) && validator.value(depth: depth + 1)
            }
        case UInt8(ascii: "["):
            return container(depth: depth, close: UInt8(ascii: "]")) { $0.value(depth: depth + 1) }
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    /// An object or array opening at `index`: its `element`s (members or items), separated
    /// by commas, up to `close`.
    mutating func container(depth: Int, close: UInt8, element: (inout CompactValidator) -> Bool) -> Bool {
        guard depth < maxDepth else { return false }
        index += 1
        kept += 1
        if take(close) { return true }
        repeat {
            guard element(&self) else { return false }
        } while take(UInt8(ascii: ","))
        return take(close)
    }

    /// A string of printable ASCII without escapes: the only strings kept as they are.
    mutating func string() -> Bool {
        guard index < count, base[index] == UInt8(ascii: "\"") else { return false }
        let start = index
        index += 1
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                kept += index - start
                return true
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return false }
            index += 1
        }
        return false
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let length = word.utf8CodeUnitCount
        guard count - index >= length else { return false }
        for offset in 0..<length where base[index + offset] != word.utf8Start[offset] { return false }
        index += length
        kept += length
        return true
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    mutating func number() -> Bool {
        let start = index
        func digit(_ at: Int) -> Bool { at < count && base[at] >= UInt8(ascii: "0") && base[at] <= UInt8(ascii: "9") }
        if index < count, base[index] == UInt8(ascii: "-") { index += 1 }
        guard digit(index) else { return false }
        if base[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while digit(index) { index += 1 }
        }
        if index < count, base[index] == UInt8(ascii: ".") {
            index += 1
            guard digit(index) else { return false }
            while digit(index) { index += 1 }
        }
        if index < count, base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            guard digit(index) else { return false }
            while digit(index) { index += 1 }
        }
        kept += index - start
        return true
    }
}
