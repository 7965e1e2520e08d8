#if canImport(Glibc)
import Glibc
#endif

/// Bytes made a few at a time on the write paths (COPY rows, cache keys). Array's generic
/// `append(contentsOf:)` took about a hundred instructions a call, more than the copy,
/// and a COPY row makes a dozen such calls (callgrind of a PostgreSQL import: 1,700
/// instructions a record); here an append is a bounds check and a store or a `memcpy`.
/// It owns its memory, so it cannot be copied.
struct ByteBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    /// Room for `more` bytes after `count`, doubling as an array does.
    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(to: count + more) }
    }

    private mutating func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 1)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = larger
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// The bytes of a collection, copied at once when they are contiguous (a `String`'s
    /// UTF-8 mostly is, an array always).
    mutating func append<Bytes: Collection>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        let copied: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        guard copied == nil else { return }
        reserve(bytes.count)
        for byte in bytes { append(byte) }
    }

    /// `value` in network byte order (COPY's binary format).
    @inline(__always)
    mutating func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        reserve(MemoryLayout<Integer>.size)
        base.storeBytes(of: value.bigEndian, toByteOffset: count, as: Integer.self)
        count += MemoryLayout<Integer>.size
    }

    /// `value` in the machine's byte order (little-endian here: cache keys).
    @inline(__always)
    mutating func appendLittleEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        reserve(MemoryLayout<Integer>.size)
        base.storeBytes(of: value.littleEndian, toByteOffset: count, as: Integer.self)
        count += MemoryLayout<Integer>.size
    }

    /// Overwrites four bytes at `offset` (before `count`) with `value`, big-endian: a length
    /// known only once what follows it is made.
    mutating func setBigEndian(_ value: UInt32, at offset: Int) {
        if offset < 0 || offset + 4 > count { fatalError("ByteBuffer.setBigEndian at \(offset), past the \(count) bytes made") }
        base.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }

    /// Forgets the bytes, keeping the memory.
    mutating func removeAll() { count = 0 }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// A copy of the bytes (tests, and the rare caller that keeps them).
    var array: [UInt8] { withUnsafeBytes { Array($0) } }
}
