#if canImport(Glibc)
import Glibc
#endif

/// Where one value was found in a record: its kind and its bytes. For strings the
/// range is the text between the quotes; for everything else, the value's own text.
package struct JSONCapture: Sendable, Equatable {
    package enum Kind: UInt8, Sendable {
        case absent, null, falseValue, trueValue, number, string, escapedString, object, array

        // Compared for every captured value by the mapper in another module: one compare of
        // the raw value (the synthesized `==` cost 60 instructions a record). It is still a
        // call there: Swift 6.3 inlines a `package` type's code in no other module, whatever
        // `@inlinable` or `@inline(__always)` say (checked with two small modules).
        @inlinable package static func == (a: Kind, b: Kind) -> Bool { a.rawValue == b.rawValue }
    }

    package var kind: Kind
    package var start: Int32
    package var end: Int32

    package static let absent = JSONCapture(kind: .absent, start: 0, end: 0)

    /// The value's whole JSON text (strings with their quotes), for the full parser.
    package var jsonRange: Range<Int> {
        kind == .string || kind == .escapedString ? Int(start - 1)..<Int(end + 1) : Int(start)..<Int(end)
    }
}

extension JSONCapture {
    /// The capture of the value whose text is `start..<end` (a string's without its quotes).
    @inline(__always)
    init(_ kind: Kind, from start: Int, to end: Int) {
        let quoted = kind == .string || kind == .escapedString
        self.init(kind: kind, start: Int32(quoted ? start + 1 : start), end: Int32(quoted ? end - 1 : end))
    }
}

extension JSONCapture.Kind {
    /// The kind of the value that begins with `byte`, in JSON the splitter validated (a
    /// string is told apart from an escaped one once its end is found).
    @inline(__always)
    init(firstByte byte: UInt8) {
        switch byte {
        case UInt8(ascii: "{"): self = .object
        case UInt8(ascii: "["): self = .array
        case UInt8(ascii: "\""): self = .string
        case UInt8(ascii: "t"): self = .trueValue
        case UInt8(ascii: "f"): self = .falseValue
        case UInt8(ascii: "n"): self = .null
        default: self = .number
        }
    }
}

/// The key paths an importer reads from each record, compiled into a tree the capture
/// scan walks once: each path's value is found and its byte range noted in a slot,
/// with no value built and nothing copied. Paths may end in an object that is scanned
/// in turn (`node(at:)`), so nested related objects are captured in the same pass.
package struct JSONCapturePlan: Sendable {
    struct Node: Sendable {
        var keys: [[UInt8]] = []
        /// Per key: the capture slot, or -1.
        var slots: [Int] = []
        /// Per key: the node scanning its value when that is an object, or -1.
        var children: [Int] = []
        /// Per key: for a member the plan does not read, learned by a `MemberCounter`, its
        /// counter; -1 for the keys the plan reads.
        var counters: [Int] = []
        /// The keys from the record down to this node.
        var path: [String] = []
    }

    var nodes = [Node()]
    /// `nodes` flattened for the scan: no arrays of arrays, nothing retained per key.
    private(set) var table = Table([Node()])
    /// Captures per record: the size of the buffer `capture(_:into:)` fills.
    package private(set) var slotCount = 0

    /// The table a scan reads, in buffers of its own: made whole when the plan changes and
    /// never changed after, so copies of a plan share it, and a scan borrows its buffers
    /// without retaining an array each. (Unchecked: nothing writes the buffers after `init`.)
    final class Table: @unchecked Sendable {
        /// The buffers, as the scan reads them; freed with the table.
        let view: TableView

        init(_ nodes: [Node]) {
            var first: [Int32] = [0], keyOffset: [Int32] = [], keyLength: [Int32] = [], slot: [Int32] = [], child: [Int32] = []
            var keyBytes: [UInt8] = []
            for node in nodes {
                for (index, key) in node.keys.enumerated() {
                    keyOffset.append(Int32(keyBytes.count))
                    keyLength.append(Int32(key.count))
                    keyBytes += key
                    slot.append(Int32(node.counters[index] >= 0 ? -2 - node.counters[index] : node.slots[index]))
                    child.append(Int32(node.children[index]))
                }
                first.append(Int32(keyOffset.count))
            }
            func buffer(_ array: [Int32]) -> UnsafeBufferPointer<Int32> {
                let buffer = UnsafeMutableBufferPointer<Int32>.allocate(capacity: max(1, array.count))
                _ = buffer.initialize(from: array)
                return UnsafeBufferPointer(rebasing: buffer[0..<array.count])
            }
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, keyBytes.count), alignment: 1)
            keyBytes.withUnsafeBytes { bytes.copyMemory(from: $0) }
            let keys = UnsafeRawBufferPointer(rebasing: bytes[0..<keyBytes.count])
            // Each node's keys by a hash of a few of their bytes, chained through `next`.
            var buckets = [Int32](repeating: -1, count: nodes.count * TableView.buckets)
            var next = [Int32](repeating: -1, count: keyOffset.count)
            for node in nodes.indices {
                for index in Int(first[node])..<Int(first[node + 1]) {
                    let key = UnsafeRawBufferPointer(rebasing: keys[Int(keyOffset[index])..<Int(keyOffset[index] + keyLength[index])])
                    let bucket = node * TableView.buckets + TableView.bucket(of: key)
                    next[index] = buckets[bucket]
                    buckets[bucket] = Int32(index)
                }
            }
            view = TableView(first: buffer(first), keyOffset: buffer(keyOffset), keyLength: buffer(keyLength), slot: buffer(slot),
                             child: buffer(child), keyBytes: keys, buckets: buffer(buckets), next: buffer(next))
        }

        deinit {
            for buffer in [view.first, view.keyOffset, view.keyLength, view.slot, view.child, view.buckets, view.next] {
                buffer.baseAddress?.deallocate()
            }
            view.keyBytes.baseAddress?.deallocate()
        }
    }
    /// The record's own object.
    package static let root = 0

    package init() {}

    /// The slot holding the value at `path` below `node`; the same path gives the same slot.
    package mutating func slot(at path: [String], from node: Int = root) -> Int {
        let (parent, entry) = self.entry(at: path, from: node)
        if nodes[parent].slots[entry] < 0 {
            nodes[parent].slots[entry] = slotCount
            slotCount += 1
        }
        table = Table(nodes)
        return nodes[parent].slots[entry]
    }

    /// Marks the member at `path` below `node` as read without capturing it, so a
    /// `MemberCounter` does not count it as unmapped.
    package mutating func read(_ path: [String], from node: Int = root) {
        _ = entry(at: path, from: node)
        table = Table(nodes)
    }

    /// The node that scans the object at `path` below `node`.
    package mutating func node(at path: [String], from node: Int = root) -> Int {
        let (parent, entry) = self.entry(at: path, from: node)
        if nodes[parent].children[entry] < 0 {
            nodes.append(Node(path: nodes[parent].path + [String(decoding: nodes[parent].keys[entry], as: UTF8.self)]))
            nodes[parent].children[entry] = nodes.count - 1
        }
        table = Table(nodes)
        return nodes[parent].children[entry]
    }

    private mutating func entry(at path: [String], from node: Int) -> (node: Int, entry: Int) {
        guard !path.isEmpty else { fatalError("a capture path names at least one key") }
        var current = node
        for key in path.dropLast() { current = self.node(at: [key], from: current) }
        let key = Array(path.last!.utf8)
        if let found = nodes[current].keys.firstIndex(of: key) { return (current, found) }
        nodes[current].keys.append(key)
        nodes[current].slots.append(-1)
        nodes[current].children.append(-1)
        nodes[current].counters.append(-1)
        return (current, nodes[current].keys.count - 1)
    }

    /// Adds `key` to `node` as a member the plan does not read, counted by `counter`.
    mutating func learn(_ key: [UInt8], at node: Int, counter: Int) {
        nodes[node].keys.append(key)
        nodes[node].slots.append(-1)
        nodes[node].children.append(-1)
        nodes[node].counters.append(counter)
        table = Table(nodes)
    }

    /// The entry of `node` for `key` (its child node, and its counter or -1 when the plan reads it), or nil.
    func entry(_ key: [UInt8], at node: Int) -> (child: Int, counter: Int)? {
        guard let index = nodes[node].keys.firstIndex(of: key) else { return nil }
        return (nodes[node].children[index], nodes[node].counters[index])
    }

    /// The path of `key` in `node`, as the summary prints it.
    func path(of key: [UInt8], at node: Int) -> String {
        (nodes[node].path + [String(decoding: key, as: UTF8.self)]).joined(separator: ".")
    }

    /// Finds every planned path in one record (an object), filling `captures` (at least
    /// `slotCount` long; what the record lacks is `.absent`). Returns false for input
    /// the scan does not vouch for — escaped keys, a key twice in one object, lone
    /// surrogates, UTF-8 forms Swift refuses, anything malformed — which the caller then
    /// hands to the full parser for its exact result or error.
    /// With a `log`, the members the plan does not read are noted in it, for a `MemberCounter`.
    /// `splitterChecked`: the record is a chunk's line, whose UTF-8 the splitter has
    /// checked already (yajl and `StrictJSONBytes` refuse every form Swift refuses), so it
    /// is not checked a second time.
    package func capture(_ record: UnsafeRawBufferPointer, into captures: UnsafeMutableBufferPointer<JSONCapture>,
                        log: UnsafeMutablePointer<CaptureLog>? = nil, maxDepth: Int = FeedOptions.defaultMaxDepth,
                        splitterChecked: Bool = false) -> Bool {
        for index in 0..<slotCount { captures[index] = .absent }
        guard record.count > 0, splitterChecked || isValidUTF8(record) else { return false }
        var scanner = JSONScanner(bytes: record, maxDepth: maxDepth)
        scanner.skipSpace()
        guard scanner.at < record.count, record[scanner.at] == UInt8(ascii: "{") else { return false }
        log?.pointee.count = 0
        let ok = withExtendedLifetime(table) {
            scanner.captureObject(table.view, node: Self.root, depth: 1, into: captures, log: log)
        }
        guard ok else { return false }
        scanner.skipSpace()
        return scanner.at == record.count
    }
}

/// The table as raw buffers: node n's entries are `first[n]..<first[n + 1]`; per entry
/// its key (`keyOffset`, `keyLength` into `keyBytes`), its capture slot (-1 for none; -2 -
/// counter for a member the plan does not read: one load tells the scan both), and the
/// node scanning its value (-1 for none). A key is found through its node's `buckets`
/// (`bucket(of:)`), whose entries chain through `next`: one comparison for most keys,
/// in whatever order the records give them.
struct TableView {
    let first: UnsafeBufferPointer<Int32>
    let keyOffset: UnsafeBufferPointer<Int32>
    let keyLength: UnsafeBufferPointer<Int32>
    let slot: UnsafeBufferPointer<Int32>
    let child: UnsafeBufferPointer<Int32>
    let keyBytes: UnsafeRawBufferPointer
    let buckets: UnsafeBufferPointer<Int32>
    let next: UnsafeBufferPointer<Int32>

    /// Buckets per node.
    static let buckets = 64

    @inline(__always)
    static func bucket(of key: UnsafeRawBufferPointer) -> Int {
        let count = key.count
        guard count > 0 else { return 0 }
        return (count &* 7 &+ Int(key[0]) &* 3 &+ Int(key[count &- 1]) &* 5 &+ Int(key[count >> 1])) & (buckets - 1)
    }

    /// The entry of `node` for `key` (counted within the node), or nil.
    @inline(__always)
    func entry(_ node: Int, _ key: UnsafeRawBufferPointer) -> Int? {
        var index = Int(buckets[node &* Self.buckets &+ Self.bucket(of: key)])
        while index >= 0 {
            if Int(keyLength[index]) == key.count, Self.equal(keyBytes.baseAddress! + Int(keyOffset[index]), key) {
                return index - Int(first[node])
            }
            index = Int(next[index])
        }
        return nil
    }

    /// Whether the `key.count` bytes at `stored` are `key`'s: short keys, the usual kind,
    /// compared in a load or two of each side instead of a call.
    @inline(__always)
    static func equal(_ stored: UnsafeRawPointer, _ key: UnsafeRawBufferPointer) -> Bool {
        let count = key.count
        guard let bytes = key.baseAddress else { return count == 0 }
        switch count {
        case 8...16:
            return stored.loadUnaligned(as: UInt64.self) == bytes.loadUnaligned(as: UInt64.self)
                && stored.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            return stored.loadUnaligned(as: UInt32.self) == bytes.loadUnaligned(as: UInt32.self)
                && stored.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        case 0..<4:
            for offset in 0..<count where stored.load(fromByteOffset: offset, as: UInt8.self) != bytes.load(fromByteOffset: offset, as: UInt8.self) {
                return false
            }
            return true
        default:
            return memcmp(stored, bytes, count) == 0
        }
    }
}

extension JSONScanner {
    /// At `{`: captures the node's keys in this object and in the objects below.
    mutating func captureObject(_ plan: TableView, node index: Int, depth: Int,
                                into captures: UnsafeMutableBufferPointer<JSONCapture>, log: UnsafeMutablePointer<CaptureLog>?) -> Bool {
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
            let found = plan.entry(index, key)
            let slot = found.map { Int(plan.slot[Int(plan.first[index]) + $0]) } ?? -2
            if let entry = found, slot >= -1 {
                // The last of two equal keys wins in a parsed object; rather than undo what
                // the first captured, leave such records to the full parser.
                guard entry < 64, seen & (1 << entry) == 0 else { return false }
                seen |= 1 << entry
                let start = at
                var kind = JSONCapture.Kind(firstByte: bytes[at])
                let child = Int(plan.child[Int(plan.first[index]) + entry])
                if kind == .object && child >= 0 {
                    guard captureObject(plan, node: child, depth: depth + 1, into: captures, log: log) else { return false }
                } else {
                    guard skipValue(depth: depth) else { return false }
                    if kind == .string && sawEscape { kind = .escapedString }
                }
                if slot >= 0 { captures[slot] = JSONCapture(kind, from: start, to: at) }
            } else {
                // Counted (slot -2 - counter), or met for the first time (-1 in the log).
                log?.pointee.note(node: index, key: key.baseAddress! - bytes.baseAddress!, count: key.count,
                                  counter: found == nil ? -1 : Int32(-2 - slot))
                guard skipValue(depth: depth) else { return false }
            }
            guard let closed = afterMember(closing: UInt8(ascii: "}")) else { return false }
            if closed { return true }
        }
    }
}

extension JSONCapturePlan {
    /// A plan that captures nothing and reads what `selection` keeps, for a
    /// `MemberCounter` beside a selective parse (`JSONValue.parse(_:keeping:)`).
    package init(reading selection: JSONSelection) {
        self.init()
        add(selection, at: Self.root)
    }

    private mutating func add(_ selection: JSONSelection, at node: Int) {
        for (name, child) in zip(selection.names, selection.children) {
            if child.keepsAll {
                read([name], from: node)
            } else {
                add(child, at: self.node(at: [name], from: node))
            }
        }
    }
}

/// The members one capture scan met that its plan does not read: each as its node, its
/// key's bytes in the record, and its counter (-1 for a key no counter has learned yet).
package struct CaptureLog {
    /// Four numbers per member: node, key offset, key length, counter.
    private var storage: UnsafeMutablePointer<Int32>
    private var capacity = 64
    /// Members noted by the last scan.
    package internal(set) var count = 0

    package init() { storage = .allocate(capacity: 4 * capacity) }

    /// Frees the storage; the log is not used after.
    package func deallocate() { storage.deallocate() }

    @inline(__always)
    mutating func note(node: Int, key offset: Int, count length: Int, counter: Int32) {
        if count == capacity { grow() }
        let at = storage + 4 * count
        at[0] = Int32(node)
        at[1] = Int32(offset)
        at[2] = Int32(length)
        at[3] = counter
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        let larger = UnsafeMutablePointer<Int32>.allocate(capacity: 8 * capacity)
        larger.moveInitialize(from: storage, count: 4 * capacity)
        storage.deallocate()
        storage = larger
        capacity *= 2
    }

    /// Member `index` (below `count`).
    func member(_ index: Int) -> (node: Int, offset: Int, length: Int, counter: Int) {
        let at = storage + 4 * index
        return (Int(at[0]), Int(at[1]), Int(at[2]), Int(at[3]))
    }
}
