#if canImport(Glibc)
import Glibc
#endif

/// Where one value was found in a record: its kind and its bytes. For strings the
/// range is the text between the quotes; for everything else, the value's own text.
public struct JSONCapture: Sendable, Equatable {
    public enum Kind: UInt8, Sendable {
        case absent, null, falseValue, trueValue, number, string, escapedString, object, array
    }

    public var kind: Kind
    public var start: Int32
    public var end: Int32

    public static let absent = JSONCapture(kind: .absent, start: 0, end: 0)

    /// The value's whole JSON text (strings with their quotes), for the full parser.
    public var jsonRange: Range<Int> {
        kind == .string || kind == .escapedString ? Int(start - 1)..<Int(end + 1) : Int(start)..<Int(end)
    }
}

/// The key paths an importer reads from each record, compiled into a tree the capture
/// scan walks once: each path's value is found and its byte range noted in a slot,
/// with no value built and nothing copied. Paths may end in an object that is scanned
/// in turn (`node(at:)`), so nested related objects are captured in the same pass.
public struct JSONCapturePlan: Sendable {
    struct Node: Sendable {
        var keys: [[UInt8]] = []
        /// Per key: the capture slot, or -1.
        var slots: [Int] = []
        /// Per key: the node scanning its value when that is an object, or -1.
        var children: [Int] = []
    }

    var nodes = [Node()]
    /// `nodes` flattened for the scan: no arrays of arrays, nothing retained per key.
    private(set) var table = Table([Node()])
    /// Captures per record: the size of the buffer `capture(_:into:)` fills.
    public private(set) var slotCount = 0

    struct Table: Sendable {
        /// Node n's entries are `first[n]..<first[n + 1]`.
        var first: [Int32] = [0]
        var keyOffset: [Int32] = []
        var keyLength: [Int32] = []
        var slot: [Int32] = []
        var child: [Int32] = []
        var keyBytes: [UInt8] = []

        init(_ nodes: [Node]) {
            for node in nodes {
                for (index, key) in node.keys.enumerated() {
                    keyOffset.append(Int32(keyBytes.count))
                    keyLength.append(Int32(key.count))
                    keyBytes += key
                    slot.append(Int32(node.slots[index]))
                    child.append(Int32(node.children[index]))
                }
                first.append(Int32(keyOffset.count))
            }
        }
    }
    /// The record's own object.
    public static let root = 0

    public init() {}

    /// The slot holding the value at `path` below `node`; the same path gives the same slot.
    public mutating func slot(at path: [String], from node: Int = root) -> Int {
        let (parent, entry) = self.entry(at: path, from: node)
        if nodes[parent].slots[entry] < 0 {
            nodes[parent].slots[entry] = slotCount
            slotCount += 1
        }
        table = Table(nodes)
        return nodes[parent].slots[entry]
    }

    /// The node that scans the object at `path` below `node`.
    public mutating func node(at path: [String], from node: Int = root) -> Int {
        let (parent, entry) = self.entry(at: path, from: node)
        if nodes[parent].children[entry] < 0 {
            nodes.append(Node())
            nodes[parent].children[entry] = nodes.count - 1
        }
        table = Table(nodes)
        return nodes[parent].children[entry]
    }

    private mutating func entry(at path: [String], from node: Int) -> (node: Int, entry: Int) {
        precondition(!path.isEmpty, "a capture path names at least one key")
        var current = node
        for key in path.dropLast() { current = self.node(at: [key], from: current) }
        let key = Array(path.last!.utf8)
        if let found = nodes[current].keys.firstIndex(of: key) { return (current, found) }
        nodes[current].keys.append(key)
        nodes[current].slots.append(-1)
        nodes[current].children.append(-1)
        return (current, nodes[current].keys.count - 1)
    }

    /// Finds every planned path in one record (an object), filling `captures` (at least
    /// `slotCount` long; what the record lacks is `.absent`). Returns false for input
    /// the scan does not vouch for — escaped keys, a key twice in one object, lone
    /// surrogates, UTF-8 forms Swift refuses, anything malformed — which the caller then
    /// hands to the full parser for its exact result or error.
    public func capture(_ record: UnsafeRawBufferPointer, into captures: UnsafeMutableBufferPointer<JSONCapture>,
                        maxDepth: Int = FeedOptions.defaultMaxDepth) -> Bool {
        for index in 0..<slotCount { captures[index] = .absent }
        guard record.count > 0, isValidUTF8(record) else { return false }
        var scanner = JSONScanner(bytes: record, maxDepth: maxDepth)
        scanner.skipSpace()
        guard scanner.at < record.count, record[scanner.at] == UInt8(ascii: "{") else { return false }
        let table = self.table
        return table.first.withUnsafeBufferPointer { first in
            table.keyOffset.withUnsafeBufferPointer { keyOffset in
                table.keyLength.withUnsafeBufferPointer { keyLength in
                    table.slot.withUnsafeBufferPointer { slot in
                        table.child.withUnsafeBufferPointer { child in
                            table.keyBytes.withUnsafeBytes { keyBytes in
                                let view = TableView(first: first, keyOffset: keyOffset, keyLength: keyLength, slot: slot,
                                                     child: child, keyBytes: keyBytes)
                                guard scanner.captureObject(view, node: Self.root, depth: 1, into: captures) else { return false }
                                scanner.skipSpace()
                                return scanner.at == record.count
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The table as raw buffers, for the length of one scan.
struct TableView {
    let first: UnsafeBufferPointer<Int32>
    let keyOffset: UnsafeBufferPointer<Int32>
    let keyLength: UnsafeBufferPointer<Int32>
    let slot: UnsafeBufferPointer<Int32>
    let child: UnsafeBufferPointer<Int32>
    let keyBytes: UnsafeRawBufferPointer

    /// The entry of `node` for `key`, or nil.
    @inline(__always)
    func entry(_ node: Int, _ key: UnsafeRawBufferPointer) -> Int? {
        let count = Int32(key.count)
        var index = Int(first[node])
        let end = Int(first[node + 1])
        while index < end {
            if keyLength[index] == count, count == 0 || (keyBytes[Int(keyOffset[index])] == key[0]
               && memcmp(keyBytes.baseAddress! + Int(keyOffset[index]), key.baseAddress!, Int(count)) == 0) {
                return index - Int(first[node])
            }
            index += 1
        }
        return nil
    }
}

extension JSONScanner {
    /// At `{`: captures the node's keys in this object and in the objects below.
    mutating func captureObject(_ plan: TableView, node index: Int, depth: Int,
                                into captures: UnsafeMutableBufferPointer<JSONCapture>) -> Bool {
        guard depth <= maxDepth else { return false }
        at += 1
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            return true
        }
        var seen: UInt64 = 0
        while true {
            guard let key = memberKey() else { return false }
            if let entry = plan.entry(index, key) {
                // The last of two equal keys wins in a parsed object; rather than undo what
                // the first captured, leave such records to the full parser.
                guard entry < 64, seen & (1 << entry) == 0 else { return false }
                seen |= 1 << entry
                let start = at
                var kind: JSONCapture.Kind
                let child = Int(plan.child[Int(plan.first[index]) + entry])
                switch bytes[at] {
                case UInt8(ascii: "{"): kind = .object
                case UInt8(ascii: "["): kind = .array
                case UInt8(ascii: "\""): kind = .string
                case UInt8(ascii: "t"): kind = .trueValue
                case UInt8(ascii: "f"): kind = .falseValue
                case UInt8(ascii: "n"): kind = .null
                default: kind = .number
                }
                if kind == .object && child >= 0 {
                    guard captureObject(plan, node: child, depth: depth + 1, into: captures) else { return false }
                } else {
                    guard skipValue(depth: depth) else { return false }
                    if kind == .string && sawEscape { kind = .escapedString }
                }
                let slot = Int(plan.slot[Int(plan.first[index]) + entry])
                if slot >= 0 {
                    let quoted = kind == .string || kind == .escapedString
                    captures[slot] = JSONCapture(kind: kind, start: Int32(quoted ? start + 1 : start),
                                                 end: Int32(quoted ? at - 1 : at))
                }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let closed = afterMember(closing: UInt8(ascii: "}")) else { return false }
            if closed { return true }
        }
    }
}
