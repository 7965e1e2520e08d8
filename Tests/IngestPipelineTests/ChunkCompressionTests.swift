import IngestJSON
import Testing
@testable import IngestPipeline

struct ChunkCompressionTests {
    @Test(arguments: [0, 1, 57, 4_096, 300_000])
    func aChunkComesBackByteForByte(size: Int) {
        var random = SplitMix64(seed: UInt64(size))
        // Records of text with repeats, as chunks are, and random bytes between them.
        let bytes = (0..<size).map { index in index % 97 < 60 ? UInt8(ascii: "a") + UInt8(index % 26) : UInt8(truncatingIfNeeded: random.next()) }
        let compressed = ChunkCompression.compress(bytes)
        #expect(Array(compressed.prefix(4)) == [0x28, 0xB5, 0x2F, 0xFD])
        #expect(ChunkCompression.decompress(compressed) == bytes)
    }

    @Test func plainNDJSONAsEarlierVersionsStoredItReadsAsItIs() {
        let plain = Array("{\"id\":1}\n{\"id\":2}".utf8)
        #expect(ChunkCompression.decompress(plain) == plain)
        #expect(ChunkCompression.decompress([]) == [])
    }

    @Test func aCutFrameIsNoChunk() {
        let compressed = ChunkCompression.compress(Array(repeating: UInt8(ascii: "x"), count: 10_000) + Array("{}".utf8))
        #expect(ChunkCompression.decompress(Array(compressed.dropLast(3))) == nil)
    }
}
