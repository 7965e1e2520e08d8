/// Where each record's own members end, as the splitter's yajl pass found them: kept in
/// a file beside each chunk (`chunk-000001.members`) for an importer in the same
/// process, so that its capture steps from member to member instead of scanning every
/// byte of the record a second time (`JSONCapturePlan.capture(_:memberEnds:into:log:maxDepth:)`).
///
/// Per member, two offsets from the record's first byte: just past its key and just past
/// its value, each flagged "not plain" for a key or string yajl did not hand over in place
/// (an escape, or one that crossed a read). The file holds 16-bit units in the machine's
/// order (only the process that wrote it reads it), per record of the chunk in order:
/// - 0 for a record without ends (rewritten on its way to the chunk, or not an object);
/// - for a record shorter than 32 KiB (nearly all): members + 1 (below 0x7FFF), the
///   record's length, then each offset in a unit, its top bit the flag;
/// - for a longer one: 0xFFFF, then members + 1, the record's length and each offset
///   (`notPlain`-flagged) as 32-bit words, each in two units (the words in the machine's order).
///
/// The length lets the importer check that an entry is its record's.
///
/// Nothing trusts the file blindly: the importer checks each end against the byte it lands
/// on, and scans a record whose ends do not fit. Only the process whose split wrote a chunk
/// reads its ends; a resumed run scans.
package enum MemberEnds {
    /// The flag on an end whose key or string is not plain.
    package static let notPlain: UInt32 = 0x8000_0000

    /// `chunk-000001.members`, beside `ChunkInfo.fileName(for:)`'s chunk.
    package static func fileName(for index: Int) -> String {
        let chunk = ChunkInfo.fileName(for: index)
        return String(chunk.dropLast(".ndjson".count)) + ".members"
    }

    /// Units the splitter gathers before it hands them to the writer: the file is written,
    /// and read, a block at a time.
    static let blockUnits = 16 << 10

    /// The chunk number in a file name made by `fileName(for:)`, or nil.
    package static func index(inFileName name: String) -> Int? {
        guard name.hasSuffix(".members") else { return nil }
        return ChunkInfo.index(inFileName: String(name.dropLast(".members".count)) + ".ndjson")
    }

    /// Units of the entry of a record of `length` bytes, from `FeedRecord.memberEnds` (nil:
    /// the record has none).
    @inline(__always)
    static func size(of ends: UnsafeBufferPointer<UInt32>?, length: Int) -> Int {
        guard let ends, ends.count % 2 == 0 else { return 1 }
        return isNarrow(ends, length: length) ? ends.count + 2 : 2 * ends.count + 5
    }

    @inline(__always)
    private static func isNarrow(_ ends: UnsafeBufferPointer<UInt32>, length: Int) -> Bool {
        ends.count / 2 + 1 < 0x7FFF && length < 0x8000
    }

    /// Writes the entry of a record of `length` bytes at `out` (`size(of:length:)` units).
    @inline(__always)
    static func encode(_ ends: UnsafeBufferPointer<UInt32>?, length: Int, at out: UnsafeMutablePointer<UInt16>) {
        guard let ends, ends.count % 2 == 0 else { return out.pointee = 0 }
        if isNarrow(ends, length: length) {
            out[0] = UInt16(ends.count / 2 + 1)
            out[1] = UInt16(length)
            // Every offset is below the record's length: 15 bits, and the flag in the 16th.
            for index in ends.indices { out[2 + index] = UInt16(truncatingIfNeeded: ends[index] >> 16 | ends[index] & 0x7FFF) }
        } else {
            let bytes = UnsafeMutableRawPointer(out)
            bytes.storeBytes(of: 0xFFFF, as: UInt16.self)
            bytes.storeBytes(of: UInt32(ends.count / 2 + 1), toByteOffset: 2, as: UInt32.self)
            bytes.storeBytes(of: UInt32(truncatingIfNeeded: length), toByteOffset: 6, as: UInt32.self)
            for index in ends.indices { bytes.storeBytes(of: ends[index], toByteOffset: 10 + 4 * index, as: UInt32.self) }
        }
    }

    /// Appends the entry of a record of `length` bytes to `out`.
    static func append(_ ends: UnsafeBufferPointer<UInt32>?, length: Int, to out: inout [UInt16]) {
        let first = out.count
        out.append(contentsOf: repeatElement(0, count: size(of: ends, length: length)))
        out.withUnsafeMutableBufferPointer { encode(ends, length: length, at: $0.baseAddress! + first) }
    }
}

/// Gathers the member ends of the chunk being split, and hands them to the chunk writer a
/// block at a time (memory stays a block, whatever the chunk's size).
final class MemberEndsWriter {
    private let committer: ChunkCommitter
    // Touched by the splitting thread only.
    @exclusivity(unchecked) private var buffer: UnsafeMutablePointer<UInt16>
    @exclusivity(unchecked) private var capacity = 2 * MemberEnds.blockUnits
    @exclusivity(unchecked) private var count = 0

    init(committer: ChunkCommitter) {
        self.committer = committer
        buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// The entry of the chunk's next record, of `length` bytes (nil: the record has no ends).
    func append(_ ends: UnsafeBufferPointer<UInt32>?, length: Int) {
        let size = MemberEnds.size(of: ends, length: length)
        if count + size > capacity {
            let larger = UnsafeMutablePointer<UInt16>.allocate(capacity: max(2 * capacity, count + size))
            larger.moveInitialize(from: buffer, count: count)
            buffer.deallocate()
            buffer = larger
            capacity = max(2 * capacity, count + size)
        }
        MemberEnds.encode(ends, length: length, at: buffer + count)
        count += size
        if count >= MemberEnds.blockUnits { committer.writeEnds(take()) }
    }

    /// The chunk's ends not handed on yet (at its end).
    func take() -> [UInt16] {
        defer { count = 0 }
        return Array(UnsafeBufferPointer(start: buffer, count: count))
    }
}

/// One record's member ends, read in place from a `MemberEnds` file: entry 2k is the
/// k-th member's key end, 2k + 1 its value end.
package struct RecordEnds {
    let base: UnsafeRawPointer
    /// Entries: twice the members.
    package let count: Int
    let wide: Bool
    /// The record's length in bytes, as the split wrote it.
    package let length: Int

    /// Entry `index`: an offset from the record's first byte, and whether its key or string is plain.
    @inline(__always)
    package subscript(index: Int) -> (offset: Int, plain: Bool) {
        if wide {
            let word = base.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self)
            return (Int(word & ~MemberEnds.notPlain), word & MemberEnds.notPlain == 0)
        }
        let unit = base.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self)
        return (Int(unit & 0x7FFF), unit & 0x8000 == 0)
    }

    /// The entries as `FeedRecord.memberEnds` gives them (for tests and messages).
    package var words: [UInt32] {
        (0..<count).map { UInt32(self[$0].offset) | (self[$0].plain ? 0 : MemberEnds.notPlain) }
    }
}

/// Reads a chunk's `MemberEnds`, a record at a time, in the chunk's order, through a
/// buffer of its own (64 KiB, more for a record whose ends need it).
package final class MemberEndsReader {
    private var source: any ByteSource
    // Touched by the thread that reads the chunk only: no exclusivity checks, which would
    // cost more than the reading itself.
    @exclusivity(unchecked) private var storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// The bytes read and not yet used: `start..<end` of `storage`.
    @exclusivity(unchecked) private var start = 0
    @exclusivity(unchecked) private var end = 0
    /// The file ended, failed or was not in this form: every later record gets nil.
    @exclusivity(unchecked) private var done = false

    package init(source: some ByteSource) {
        self.source = source
    }

    /// The file at `path`, or nil when it cannot be opened (its records are then scanned).
    package convenience init?(path: String) {
        guard let source = try? FileByteSource(path: path) else { return nil }
        self.init(source: source)
    }

    /// The units as `MemberEnds.append` made them.
    convenience init(units: [UInt16]) {
        self.init(source: MemoryByteSource(units.withUnsafeBytes { Array($0) }))
    }

    deinit { storage.deallocate() }

    /// Calls `body` with the next record's ends, or nil when the record has none or the file
    /// ends or is not in this form (every later record gets nil then).
    package func withNext<Result>(_ body: (RecordEnds?) throws -> Result) rethrows -> Result {
        guard !done, fill(2) else { return try stop(body) }
        // Locals, not the properties, in the loop below.
        var units = UnsafeRawPointer(storage.baseAddress! + start)
        let header = units.loadUnaligned(as: UInt16.self)
        if header == 0 {
            start += 2
            return try body(nil)
        }
        let wide = header == 0xFFFF
        var members = Int(header) - 1
        var length = 0
        if wide {
            guard fill(10) else { return try stop(body) }
            units = UnsafeRawPointer(storage.baseAddress! + start)
            members = Int(units.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) - 1
            length = Int(units.loadUnaligned(fromByteOffset: 6, as: UInt32.self))
        }
        let entries = 2 * members
        let size = (wide ? 10 : 4) + entries * (wide ? 4 : 2)
        // No more than the split keeps (shim.h's CYAJL_MOST_MEMBERS): a damaged header asks for no more memory.
        guard members >= 0, members <= 1 << 16, fill(size) else { return try stop(body) }
        units = UnsafeRawPointer(storage.baseAddress! + start)
        if !wide { length = Int(units.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
        start += size
        return try body(RecordEnds(base: units + (wide ? 10 : 4), count: entries, wide: wide, length: length))
    }

    /// Passes over the next `count` records.
    package func skip(_ count: Int) {
        for _ in 0..<count { withNext { _ in } }
    }

    private func stop<Result>(_ body: (RecordEnds?) throws -> Result) rethrows -> Result {
        done = true
        return try body(nil)
    }

    /// At least `count` bytes from `start` in the buffer; false when the file has fewer.
    private func fill(_ count: Int) -> Bool {
        if end - start >= count { return true }
        if count > storage.count {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 2 * storage.count), alignment: 16)
            larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[start..<end]))
            storage.deallocate()
            storage = larger
        } else if start > 0 {
            storage.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[start..<end]))
        }
        (start, end) = (0, end - start)
        while end < count {
            guard let read = try? source.read(into: UnsafeMutableRawBufferPointer(rebasing: storage[end...])), read > 0 else {
                return false
            }
            end += read
        }
        return true
    }
}
