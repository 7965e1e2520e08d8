import IngestJSON
import IngestStore

/// What a batch save records beside its rows, in the same transaction: the chunk's
/// marker moved from `from` to `done`, and the records the mapping rejected.
struct ChunkSave: Sendable {
    var chunk: ChunkInfo
    var from: Int
    var done: Int
    var rejects: [ImportMarker.Reject]
    /// The chunk's bytes, for the text of records the write itself rejects.
    var bytes: [UInt8]
    /// What the batch's records held that the pipeline does not map.
    var members = MemberCensus()
    /// Whether this save completes the chunk.
    var endsChunk: Bool { done >= chunk.records }
}

/// The batch path's store backend, as a worker sees it: requests to fill, and one save
/// per batch that writes its rows, the chunk's marker and the rejects in ONE transaction
/// (`SQLiteChunkWriter` over `BatchInserter`, `PostgresChunkWriter` over
/// `PostgresBatchWriter`). One writer per worker; `prepare` runs before the batch's turn
/// to commit (on the worker's mapping thread where the writer `overlapsMapping`, so it
/// must not touch what `save` changes), `save` after it.
protocol BatchChunkWriter: AnyObject, SendableMetatype {
    /// A request with what could be looked up outside the write transaction.
    associatedtype Prepared: Sendable
    /// Whether the worker maps its next batch on another thread while this writer saves:
    /// worth it where the store does the writing's work (a server), not where the worker's
    /// own thread does and other workers overlap it anyway.
    var overlapsMapping: Bool { get }
    /// Makes the requests the worker's `RowMapper` fills.
    var requests: any BatchRequestMaking { get }
    /// Looks up what the write needs and can learn before it holds the store's write lock.
    /// - Throws: the store's errors.
    func prepare(_ request: BatchInsertRequest) throws -> Prepared
    /// Writes `prepared` with `save`'s marker and rejects in one transaction, and returns
    /// what it did; `rejected` holds the mapping's rejects and the write's, in that order.
    /// - Throws: `ChunkTakenOver` when another process holds the chunk now (nothing is
    ///   written); the store's errors (nothing is written).
    func save(_ prepared: Prepared, _ save: ChunkSave) throws -> BatchResult
}
