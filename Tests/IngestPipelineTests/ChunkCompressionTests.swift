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

    @Test func chunksCompressedAsTheirBlocksAreWrittenComeBackByteForByte() throws {
        // One encoder for a whole split: each chunk a frame of its own, whatever came before.
        let encoder = ChunkCompression.Encoder()
        var random = SplitMix64(seed: 7)
        for size in [300_000, 0, 1, 70_000] {
            let bytes = (0..<size).map { index in index % 89 < 50 ? UInt8(ascii: "a") + UInt8(index % 26) : UInt8(truncatingIfNeeded: random.next()) }
            encoder.begin()
            var start = 0
            for blockSize in [1, 65_536, 100_000].cycled(until: size) {
                let end = min(size, start + blockSize)
                bytes[start..<end].withUnsafeBytes { encoder.append($0) }
                start = end
                if start == size { break }
            }
            let frame = try encoder.finish()
            #expect(Array(frame.prefix(4)) == [0x28, 0xB5, 0x2F, 0xFD])
            #expect(ChunkCompression.decompress(frame) == bytes, "a chunk of \(size) bytes")
        }
    }

    @Test func aCutStreamedFrameIsNoChunk() throws {
        let encoder = ChunkCompression.Encoder()
        encoder.begin()
        (Array(repeating: UInt8(ascii: "x"), count: 10_000) + Array("{}".utf8)).withUnsafeBytes { encoder.append($0) }
        let frame = try encoder.finish()
        #expect(ChunkCompression.decompress(frame) != nil)
        #expect(ChunkCompression.decompress(Array(frame.dropLast(3))) == nil)
    }
}

private extension Array {
    /// The elements over and over, enough of them to add up past `total` when they are sizes.
    func cycled(until total: Int) -> [Element] where Element == Int {
        var result: [Int] = []
        var sum = 0
        while sum < Swift.max(total, 1) {
            for element in self { result.append(element); sum += element }
        }
        return result
    }
}
