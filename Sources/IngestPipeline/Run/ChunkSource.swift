import IngestJSON

/// A chunk a worker claimed: its records' bytes (one a line, as the split wrote them,
/// checked against the chunk's checksum) and how many of them an earlier save did.
struct ClaimedChunk: Sendable {
    var info: ChunkInfo
    var bytes: [UInt8]
    /// The chunk's `MemberEnds` file, when this process's split wrote it.
    var memberEndsFile: String? = nil
    /// Records done before this claim (the chunk's marker).
    var done: Int
    /// Seconds spent reading and checking the bytes (the report counts them as parsing).
    var readSeconds = 0.0
    /// Waits, before the chunk's first save, until its saves may commit: in feed order
    /// (`CommitOrder` on SQLite, `PostgresCommitTurns` across PostgreSQL's processes).
    /// Throws when the run stopped meanwhile, or `ChunkYielded` when the worker should give
    /// the chunk back and claim again.
    var waitForTurn: @Sendable () throws -> Void = {}
    /// The chunk's last save committed.
    var finished: @Sendable () -> Void = {}
}

/// Where one worker of a run gets its chunks: the run store's side of the workers. On
/// SQLite the queue the split fills in feed order (`SQLiteChunkSource`); on PostgreSQL
/// `SKIP LOCKED` leases that every process joined to the run shares
/// (`PostgresChunkSource`). Called from the worker's mapping thread only.
protocol ChunkSource: AnyObject {
    /// The next chunk to import, or nil when the run has none left for this worker (or
    /// `stop` says so while it waits for one).
    /// - Throws: `ImportError.chunkChanged` for a chunk whose bytes are not those the split
    ///   made; the store's errors; `ImportError` when no more chunks can come (a failed split).
    func claim(until stop: () -> Bool) throws -> ClaimedChunk?
}

/// A save found its chunk claimed by another process (this one stalled past its lease):
/// that process goes on from the chunk's marker, and this worker leaves the chunk.
struct ChunkTakenOver: Error {}

/// The run stopped while a worker waited for its turn to commit (another worker failed).
struct CommitTurnCancelled: Error {}
