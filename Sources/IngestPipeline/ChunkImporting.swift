import IngestJSON

/// What the importer asks of a worker, on either path.
protocol ChunkImporting: AnyObject {
    var times: StageTimes { get }
    func importChunk(_ chunk: ChunkInfo, directory: String, skip: Int, saveEvery: Int, verified: Bool,
                     afterSave: (ImportWorker.ChunkResult) throws -> Void) throws
}

extension ImportWorker: ChunkImporting {}
