#if canImport(Glibc)
import Glibc
#endif

/// Which members of a JSON object a reader needs: a tree of keys, each keeping its
/// whole value or, when that value is an object, only the members its own selection
/// names. `JSONValue.parse(_:keeping:)` builds just those, so an importer that maps ten
/// fields of a record pays nothing for the rest.
public struct JSONSelection: Sendable, Equatable {
    /// True when the whole value is kept.
    public private(set) var keepsAll: Bool
    private(set) var names: [String] = []
    private(set) var keys: [[UInt8]] = []
    private(set) var children: [JSONSelection] = []

    /// Keeps the whole value.
    public static let all = JSONSelection(keepsAll: true)
    /// Keeps no member (an object becomes `{}`).
    public static let none = JSONSelection(keepsAll: false)

    private init(keepsAll: Bool) { self.keepsAll = keepsAll }

    /// Keeps the value at `path` (keys from this object down), or only `inside` of it
    /// when it is an object. Keeping a path twice keeps the union.
    public mutating func keep(_ path: [String], inside: JSONSelection = .all) {
        guard !keepsAll else { return }
        guard let first = path.first else {
            self.merge(inside)
            return
        }
        let position: Int
        if let found = names.firstIndex(of: first) {
            position = found
        } else {
            names.append(first)
            keys.append(Array(first.utf8))
            children.append(.none)
            position = names.count - 1
        }
        children[position].keep(Array(path.dropFirst()), inside: inside)
    }

    private mutating func merge(_ other: JSONSelection) {
        if other.keepsAll {
            self = .all
            return
        }
        for (name, child) in zip(other.names, other.children) { keep([name], inside: child) }
    }

    fileprivate func child(for key: UnsafeRawBufferPointer) -> JSONSelection? {
        for (index, candidate) in keys.enumerated() where candidate.count == key.count {
            if candidate.withUnsafeBytes({ $0.elementsEqual(key) }) { return children[index] }
        }
        return nil
    }
}

extension JSONValue {
    /// Parses one JSON value, keeping only what `selection` names (all of it for
    /// `.all`). Looking up a selected path in the result gives what it gives in the
    /// whole value; members not selected are absent.
    ///
    /// Input the fast path does not vouch for (escaped keys, lone surrogates, anything
    /// malformed) goes through the full parser, so errors are exactly `parse(_:)`'s.
    /// - Throws: `FeedError` with the position, as `parse(_:)`.
    public static func parse(_ bytes: UnsafeRawBufferPointer, keeping selection: JSONSelection,
                             maxDepth: Int = FeedOptions.defaultMaxDepth) throws -> JSONValue {
        if !selection.keepsAll, bytes.count > 0, isValidUTF8(bytes) {
            var scanner = SelectionScanner(bytes: bytes, maxDepth: maxDepth)
            if let value = scanner.document(selection) { return value }
        }
        return try parse(bytes, maxDepth: maxDepth)
    }
}

/// True unless the text holds a UTF-8 form yajl lets through but Swift (and Ingest)
/// refuses: overlong leads (C0, C1, E0 80–9F, F0 80–8F), encoded surrogates (ED A0–BF)
/// and code points past U+10FFFF (F4 90–, F5–FF). yajl has checked the rest (lead and
/// continuation bytes); ASCII, the usual case, is passed eight bytes at a time.
private func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var index = 0
    let count = bytes.count
    while index < count {
        if index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
            continue
        }
        let lead = bytes[index]
        index += 1
        guard lead >= 0xC0 else { continue }
        let next = index < count ? bytes[index] : 0
        switch lead {
        case 0xC0, 0xC1, 0xF5...0xFF: return false
        case 0xE0 where next < 0xA0: return false
        case 0xED where next >= 0xA0: return false
        case 0xF0 where next < 0x90: return false
        case 0xF4 where next >= 0x90: return false
        default: continue
        }
    }
    return true
}

/// Walks JSON text the splitter already validated, building the selected members and
/// skipping the rest. Every method returns nil (or false) to hand the whole input
/// back to the full parser: it never decides an error itself.
private struct SelectionScanner {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var at = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func document(_ selection: JSONSelection) -> JSONValue? {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: "{"), let value = object(selection, depth: 1) else { return nil }
        skipSpace()
        return at == bytes.count ? value : nil
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x0A, 0x0D, 0x09: at += 1
            default: return
            }
        }
    }

    /// At `{`: the object with the selected members only.
    private mutating func object(_ selection: JSONSelection, depth: Int) -> JSONValue? {
        guard depth <= maxDepth else { return nil }
        at += 1
        skipSpace()
        var members: [JSONMember] = []
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            return .object(members)
        }
        members.reserveCapacity(selection.keys.count)
        while true {
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let keyEnd = stringEnd(), !sawEscape else { return nil }
            let key = UnsafeRawBufferPointer(rebasing: bytes[(at + 1)..<keyEnd])
            at = keyEnd + 1
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { return nil }
            at += 1
            skipSpace()
            guard at < bytes.count else { return nil }
            if let child = selection.keepsAll ? .all : selection.child(for: key) {
                let value: JSONValue?
                if !child.keepsAll, bytes[at] == UInt8(ascii: "{") {
                    value = object(child, depth: depth + 1)
                } else {
                    value = whole(depth: depth)
                }
                guard let value else { return nil }
                members.append(JSONMember(String(decoding: key, as: UTF8.self), value))
            } else {
                guard skipValue(depth: depth) else { return nil }
            }
            guard let closed = afterMember(closing: UInt8(ascii: "}")) else { return nil }
            if closed { return .object(members) }
        }
    }

    /// After a member or item: true past the closing bracket, false past a comma, nil for
    /// anything else.
    private mutating func afterMember(closing: UInt8) -> Bool? {
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

    /// The whole value here: scalars and containers built directly.
    private mutating func whole(depth: Int) -> JSONValue? {
        let start = at
        switch bytes[at] {
        case UInt8(ascii: "\""):
            guard let end = stringEnd() else { return nil }
            at = end + 1
            if sawEscape { return parsed(start..<at, depth: depth) }
            // The record passed isValidUTF8 and yajl: decoding repairs nothing.
            return .string(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<end]), as: UTF8.self))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            while at < bytes.count, Self.isNumberByte(bytes[at]) { at += 1 }
            return .number(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self))
        case UInt8(ascii: "t"):
            return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"):
            return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"):
            return literal("null") ? .null : nil
        case UInt8(ascii: "["):
            guard depth + 1 <= maxDepth else { return nil }
            at += 1
            skipSpace()
            var items: [JSONValue] = []
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .array(items)
            }
            while at < bytes.count, let item = whole(depth: depth + 1) {
                items.append(item)
                guard let closed = afterMember(closing: UInt8(ascii: "]")) else { return nil }
                if closed { return .array(items) }
            }
            return nil
        case UInt8(ascii: "{"):
            return object(.all, depth: depth + 1)
        default:
            return nil
        }
    }

    private func parsed(_ range: Range<Int>, depth: Int) -> JSONValue? {
        try? JSONValue.parse(UnsafeRawBufferPointer(rebasing: bytes[range]), maxDepth: max(1, maxDepth - depth))
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[at + offset] != word.utf8Start[offset] { return false }
        at += count
        return true
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
             UInt8(ascii: "e"), UInt8(ascii: "E"): true
        default: false
        }
    }

    /// Set by `stringEnd()`: the string had a backslash escape.
    private var sawEscape = false

    /// At `"`: the index of the closing quote, or nil for a lone surrogate escape or no
    /// end. Control characters are not looked for: the splitter's yajl refused any
    /// before the chunk was written, and the worker checks the chunk's checksum.
    private mutating func stringEnd() -> Int? {
        sawEscape = false
        guard let base = bytes.baseAddress else { return nil }
        var index = at + 1
        while index < bytes.count {
            guard let quote = memchr(base + index, Int32(UInt8(ascii: "\"")), bytes.count - index) else { return nil }
            let end = base.distance(to: UnsafeRawPointer(quote))
            if let slash = memchr(base + index, Int32(UInt8(ascii: "\\")), end - index) {
                sawEscape = true
                index = base.distance(to: UnsafeRawPointer(slash)) + 2
                continue
            }
            if sawEscape, JSONValueBuilder.loneSurrogate(in: UnsafeRawBufferPointer(rebasing: bytes[at..<end])) != nil {
                return nil
            }
            return end
        }
        return nil
    }

    /// Moves past the value here, nesting no deeper than the limit. Brackets must pair
    /// (a bit per level says which is open); past 64 levels the full parser takes over.
    private mutating func skipValue(depth: Int) -> Bool {
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
