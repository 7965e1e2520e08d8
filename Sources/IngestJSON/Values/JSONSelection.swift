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
            var scanner = JSONScanner(bytes: bytes, maxDepth: maxDepth)
            if let value = scanner.document(selection) { return value }
        }
        return try parse(bytes, maxDepth: maxDepth)
    }
}

/// True unless the text holds a UTF-8 form yajl lets through but Swift (and Ingest)
/// refuses: overlong leads (C0, C1, E0 80–9F, F0 80–8F), encoded surrogates (ED A0–BF)
/// and code points past U+10FFFF (F4 90–, F5–FF). yajl has checked the rest (lead and
/// continuation bytes); ASCII, the usual case, is passed eight bytes at a time.
// Not `String(validating:)`: it builds a String (an allocation and a copy per record)
// where only a yes or no is wanted, on every record the importer reads.
func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var index = 0
    let count = bytes.count
    while index < count {
        if index + 32 <= count,
           (bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) | bytes.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
            | bytes.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self) | bytes.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self))
            & 0x8080_8080_8080_8080 == 0 {
            index += 32
            continue
        }
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

extension JSONScanner {
    mutating func document(_ selection: JSONSelection) -> JSONValue? {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: "{"), let value = object(selection, depth: 1) else { return nil }
        skipSpace()
        return at == bytes.count ? value : nil
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
            guard let key = memberKey() else { return nil }
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

}
