import IngestJSON

/// What the importer asks of a worker, on either path.
protocol ChunkImporting: AnyObject {
    var times: StageTimes { get }
    /// Maps the whole chunk, calls `waitForTurn` (commits go in feed order), then saves
    /// it batch by batch, calling `afterSave` after each save.
    func importChunk(_ chunk: ChunkInfo, directory: String, skip: Int, saveEvery: Int, verified: Bool,
                     waitForTurn: () throws -> Void, afterSave: (ImportWorker.ChunkResult) throws -> Void) throws
}

/// The run stopped while a worker waited for its turn to commit (another worker failed).
struct CommitTurnCancelled: Error {}

extension ImportWorker: ChunkImporting {}
