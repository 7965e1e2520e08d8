import IngestJSON

/// A SQLite run's chunks, for one worker: the chunk files the split offers to the queue
/// in feed order, read whole and checked against their checksums. Saves commit in feed
/// order (`CommitOrder`), so several workers leave the store as one would.
final class SQLiteChunkSource: ChunkSource {
    let queue: ChunkQueue
    let directory: String
    /// Records already done per chunk (an earlier run's marker).
    let done: [Int: Int]
    /// Whether a chunk's bytes were checked already (this run wrote or verified them).
    let trusted: @Sendable (Int) -> Bool
    /// Whether this process's split wrote a chunk's `MemberEnds` (an earlier process's are not read).
    let endsWritten: @Sendable (Int) -> Bool
    let state: RunState
    /// The last chunk's bytes, read into again for the next (`FileOps.readFile(_:into:)`):
    /// by then this worker has saved that chunk and holds it no more.
    private var lastBytes: [UInt8] = []

    init(queue: ChunkQueue, directory: String, done: [Int: Int], trusted: @escaping @Sendable (Int) -> Bool,
         endsWritten: @escaping @Sendable (Int) -> Bool = { _ in false }, state: RunState) {
        self.queue = queue
        self.directory = directory
        self.done = done
        self.trusted = trusted
        self.endsWritten = endsWritten
        self.state = state
    }

    func claim(until stop: () -> Bool) throws -> ClaimedChunk? {
        guard !stop(), let chunk = queue.pop() else { return nil }
        let started = StageTimes.now()
        let path = directory + "/" + chunk.file
        var bytes = lastBytes
        lastBytes = []
        try FileOps.readFile(path, into: &bytes)
        lastBytes = bytes
        // The mapper trusts that the split's yajl validated these bytes: make sure they are those bytes.
        guard trusted(chunk.index) || bytes.withUnsafeBytes({ Checksum.hex(of: $0) }) == chunk.checksum else {
            throw ImportError(.chunkChanged(path: path))
        }
        let (state, index) = (self.state, chunk.index)
        let ends = endsWritten(index) ? directory + "/" + MemberEnds.fileName(for: index) : nil
        return ClaimedChunk(info: chunk, bytes: bytes, memberEndsFile: ends, done: done[index] ?? 0, readSeconds: StageTimes.now() - started,
                            waitForTurn: { if !state.order.waitForTurn(index) { throw CommitTurnCancelled() } },
                            finished: { state.chunkFinished(index) })
    }
}
