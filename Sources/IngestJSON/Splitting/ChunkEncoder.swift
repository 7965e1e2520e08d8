/// Turns a chunk's bytes, block by block as the split writes them, into the bytes that
/// `Splitter.onChunkBytes` is handed (compressed, say). The chunk is then never held whole
/// beside its encoded form, and never copied once more to be encoded.
///
/// One encoder serves a whole split, one chunk after another, on the split's writer thread.
package protocol ChunkEncoder: AnyObject {
    /// Starts the next chunk.
    func begin()
    /// The chunk's next bytes.
    func append(_ block: UnsafeRawBufferPointer)
    /// The chunk's encoded bytes, once all of it was appended.
    /// - Throws: why it could not be encoded; the split then fails with that error.
    func finish() throws -> [UInt8]
}

/// The chunk's bytes as they are: what `onChunkBytes` gets when no encoder is given.
final class PlainChunkEncoder: ChunkEncoder {
    private var data: [UInt8] = []
    private var lastSize = 0

    func begin() {
        // Room for a chunk like the last one, so the array is not copied as it doubles.
        data = []
        data.reserveCapacity(lastSize * 9 / 8)
    }

    func append(_ block: UnsafeRawBufferPointer) { data.append(contentsOf: block) }

    func finish() -> [UInt8] {
        // Handed over whole: the next chunk starts an array of its own.
        let finished = data
        data = []
        lastSize = finished.count
        return finished
    }
}

/// Keeps nothing of a chunk's bytes: for a caller of `onChunkBytes` that needs only the
/// chunk's description (its file holds the bytes), so that no chunk is copied for it.
package final class DiscardingChunkEncoder: ChunkEncoder {
    package init() {}
    package func begin() {}
    package func append(_ block: UnsafeRawBufferPointer) {}
    package func finish() -> [UInt8] { [] }
}
