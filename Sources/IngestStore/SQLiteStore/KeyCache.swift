/// Related objects' keys → their rows, for the batch path: one table per coordinator,
/// shared by all its inserters, kept compact so an import's memory stays flat.
///
/// A key is stored as bytes (the entity's number, a type tag, the value's bytes) in one
/// arena, and the table holds only a hash, the row and where the bytes are: about 30
/// bytes a key with the arena, against about 100 for a dictionary of `Value`s; text keys are
/// looked up straight from a request's bytes, with no `String` made. Past `limit` keys
/// it starts over (misses are looked up in the store again), so memory stays bounded.
struct KeyCache: Sendable {
    /// Per slot: the hash's low 32 bits (0: empty), where the key's bytes start in the
    /// arena (a length byte, then the bytes), the row, and the hash of its last written fields. 24 bytes a slot.
    private var hashes: [UInt32]
    private var offsets: [UInt32]
    private var rows: [Int64]
    /// Per slot: a hash of the fields the last write of this row gave (0: not known). A
    /// related object a record repeats exactly needs no write at all (`BatchInserter`).
    private var written: [UInt64]
    private var arena: [UInt8] = []
    private(set) var count = 0
    let limit: Int
    private let hasherSeed = FieldHasher()

    init(limit: Int) {
        self.limit = max(16, limit)
        hashes = Array(repeating: 0, count: 1024)
        offsets = Array(repeating: 0, count: 1024)
        rows = Array(repeating: 0, count: 1024)
        written = Array(repeating: 0, count: 1024)
    }

    /// The row stored for `key` (encoded by `KeyBytes`), or nil.
    func row(for key: UnsafeRawBufferPointer) -> Int64? {
        entry(for: key)?.row
    }

    /// The row stored for `key` and the hash of the fields last written to it (0: not known).
    func entry(for key: UnsafeRawBufferPointer) -> (row: Int64, written: UInt64)? {
        guard key.count < 256 else { return nil }
        let hash = self.hash(key)
        let mask = hashes.count - 1
        var slot = Int(hash) & mask
        return arena.withUnsafeBytes { arena in
            while true {
                let stored = hashes[slot]
                if stored == 0 { return nil }
                if stored == hash, Self.matches(arena, offsets[slot], key) { return (rows[slot], written[slot]) }
                slot = (slot + 1) & mask
            }
        }
    }

    /// Sets the hash of the fields last written to `key`'s row, when the key is here.
    mutating func setWritten(_ key: UnsafeRawBufferPointer, _ fields: UInt64) {
        guard key.count < 256 else { return }
        let hash = self.hash(key)
        let mask = hashes.count - 1
        var slot = Int(hash) & mask
        arena.withUnsafeBytes { arena in
            while hashes[slot] != 0 {
                if hashes[slot] == hash, Self.matches(arena, offsets[slot], key) {
                    written[slot] = fields
                    return
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// Records `row` for `key` (a key already present keeps its row; keys of 256 bytes
    /// or more are not kept: they are looked up in the store each time), and `written`,
    /// the hash of the fields just written to it (nil: unchanged; 0: no longer known).
    mutating func insert(_ key: UnsafeRawBufferPointer, row: Int64, written fields: UInt64? = nil) {
        guard key.count < 256 else { return }
        if count >= limit { self = KeyCache(limit: limit) }
        // Linear probing stays short up to seven eighths full, and the table stays small.
        if (count + 1) * 8 > hashes.count * 7 { grow() }
        let hash = self.hash(key)
        let mask = hashes.count - 1
        var slot = Int(hash) & mask
        while hashes[slot] != 0 {
            if hashes[slot] == hash, arena.withUnsafeBytes({ Self.matches($0, offsets[slot], key) }) {
                if let fields { written[slot] = fields }
                return
            }
            slot = (slot + 1) & mask
        }
        hashes[slot] = hash
        offsets[slot] = UInt32(arena.count)
        rows[slot] = row
        written[slot] = fields ?? 0
        arena.append(UInt8(key.count))
        arena.append(contentsOf: key)
        count += 1
    }

    private static func matches(_ arena: UnsafeRawBufferPointer, _ offset: UInt32, _ key: UnsafeRawBufferPointer) -> Bool {
        let start = Int(offset)
        return Int(arena[start]) == key.count && memcmp(arena.baseAddress! + start + 1, key.baseAddress!, key.count) == 0
    }

    private mutating func grow() {
        let (oldHashes, oldOffsets, oldRows, oldWritten) = (hashes, offsets, rows, written)
        let size = hashes.count * 2
        hashes = []
        offsets = []
        rows = []
        written = []
        hashes = Array(repeating: 0, count: size)
        offsets = Array(repeating: 0, count: size)
        rows = Array(repeating: 0, count: size)
        written = Array(repeating: 0, count: size)
        for index in oldHashes.indices where oldHashes[index] != 0 {
            var slot = Int(oldHashes[index]) & (size - 1)
            while hashes[slot] != 0 { slot = (slot + 1) & (size - 1) }
            hashes[slot] = oldHashes[index]
            offsets[slot] = oldOffsets[index]
            rows[slot] = oldRows[index]
            written[slot] = oldWritten[index]
        }
    }

    /// A 32-bit hash of short keys (never 0: 0 marks an empty slot), with this cache's
    /// copy of the process's secrets (read once, not from a global per key).
    @inline(__always)
    private func hash(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hasher = hasherSeed
        hasher.mix(bytes)
        let low = UInt32(truncatingIfNeeded: hasher.value)
        return low == 0 ? 1 : low
    }
}

/// Builds the byte form of an entity's key for `KeyCache`, in a buffer reused per key.
struct KeyBytes: ~Copyable {
    private(set) var bytes = ByteBuffer()

    /// The key in a request's cell; false for a null cell (no key).
    mutating func cell(entity: Int, _ cell: BatchInsertRequest.Cell, type: AttributeType, request: BatchInsertRequest,
                       text: UnsafeRawBufferPointer) -> Bool {
        switch cell {
        case .null: return false
        case .text(let offset, let count):
            start(entity, tag: type == .decimal ? 8 : 1)
            bytes.append(UnsafeRawBufferPointer(rebasing: text[Int(offset)..<Int(offset + count)]))
        case .int(let number):
            if type == .bool { fixed(entity, tag: 4, number) } else { fixed(entity, tag: 2, number) }
        case .double(let number):
            fixed(entity, tag: type == .date ? 5 : 3, number.bitPattern)
        case .value(let index):
            value(entity: entity, request.values[Int(index)])
        }
        return true
    }

    mutating func value(entity: Int, _ value: Value) {
        switch value {
        case .string(let text):
            start(entity, tag: 1)
            bytes.append(contentsOf: text.utf8)
        case .int(let number): fixed(entity, tag: 2, number)
        case .double(let number): fixed(entity, tag: 3, number.bitPattern)
        case .bool(let flag): fixed(entity, tag: 4, Int64(flag ? 1 : 0))
        case .date(let date): fixed(entity, tag: 5, date.timeIntervalSinceReferenceDate.bitPattern)
        case .binary(let data):
            start(entity, tag: 6)
            bytes.append(contentsOf: data)
        case .uuid(let uuid):
            start(entity, tag: 7)
            withUnsafeBytes(of: uuid.uuid) { bytes.append($0) }
        case .decimal(let text):
            start(entity, tag: 8)
            bytes.append(contentsOf: text.utf8)
        }
    }

    private mutating func start(_ entity: Int, tag: UInt8) {
        bytes.removeAll()
        bytes.appendLittleEndian(UInt32(truncatingIfNeeded: entity))
        bytes.append(tag)
    }

    private mutating func fixed<T: FixedWidthInteger>(_ entity: Int, tag: UInt8, _ value: T) {
        start(entity, tag: tag)
        bytes.appendLittleEndian(value)
    }
}

#if canImport(Glibc)
import Foundation
import Glibc
#endif
