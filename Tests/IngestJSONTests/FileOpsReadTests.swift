import IngestTestSupport
import Testing
@testable import IngestJSON

/// `FileOps.readFile(_:into:)`, which a worker reads its chunks with, one into the memory of
/// the one before.
@Suite struct FileOpsReadTests {
    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed } }

    @Test func eachFileReadIntoOneArrayGivesThatFileWholeWhateverTheArrayHeldBefore() throws {
        let dir = try TemporaryDirectory()
        var bytes: [UInt8] = []
        // Larger, smaller, empty, exactly a page, and larger again than any before.
        for (index, size) in [300_000, 1_000, 0, 4_096, 1_000_000].enumerated() {
            let path = dir.file("chunk-\(index)")
            let contents = Self.bytes(size, seed: UInt8(index))
            try FileOps.writeAtomically(contents, to: path)
            try FileOps.readFile(path, into: &bytes)
            #expect(bytes == contents, "file \(index) of \(size) bytes read as \(bytes.count) bytes")
        }
    }

    @Test func anArrayAnotherHolderSharesIsLeftAsItWas() throws {
        let dir = try TemporaryDirectory()
        let first = Self.bytes(50_000, seed: 1)
        let second = Self.bytes(40_000, seed: 2)
        try FileOps.writeAtomically(first, to: dir.file("a"))
        try FileOps.writeAtomically(second, to: dir.file("b"))
        var bytes: [UInt8] = []
        try FileOps.readFile(dir.file("a"), into: &bytes)
        let held = bytes
        try FileOps.readFile(dir.file("b"), into: &bytes)
        #expect(held == first)
        #expect(bytes == second)
    }

    @Test func aFileThatCannotBeReadThrowsNamingItAndLeavesTheArrayEmpty() throws {
        let dir = try TemporaryDirectory()
        var bytes = Self.bytes(10_000, seed: 3)
        let missing = dir.file("missing")
        let error = #expect(throws: IOError.self) { try FileOps.readFile(missing, into: &bytes) }
        #expect(error.map { "\($0)".contains(missing) } == true, "\(String(describing: error))")
        #expect(bytes.isEmpty)
    }
}
