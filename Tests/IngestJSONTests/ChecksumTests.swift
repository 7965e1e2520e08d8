import IngestJSON
import Testing

@Suite struct ChecksumTests {
    /// Reference values from Python's `xxhash.xxh64_hexdigest` (seed 0).
    static let vectors: [(bytes: [UInt8], hex: String)] = [
        ([], "ef46db3751d8e999"),
        (Array("a".utf8), "d24ec4f1a98c6e5b"),
        (Array("abc".utf8), "44bc2cf5ad770999"),
        (Array("0123456789abcdef0123456789abcdef0".utf8), "e87684f08d6d0816"),
        (Array(repeating: Array(0...255) as [UInt8], count: 3).flatMap { $0 }, "8e03c838c596036f"),
    ]

    @Test func matchesTheReferenceImplementation() {
        for vector in Self.vectors {
            #expect(vector.bytes.withUnsafeBytes { Checksum.hex(of: $0) } == vector.hex, "\(vector.bytes.count) bytes")
        }
    }

    @Test(arguments: [1, 3, 7, 31, 32, 33, 100])
    func givesTheSameValueWhateverTheBlockSize(block: Int) {
        let bytes = Self.vectors[4].bytes
        var checksum = Checksum()
        for start in stride(from: 0, to: bytes.count, by: block) {
            checksum.update(Array(bytes[start..<min(start + block, bytes.count)]))
        }
        #expect(checksum.hex == "8e03c838c596036f")
    }
}
