import IngestJSON
import IngestStore

/// The batch path's writer on SQLite: a `BatchInserter` whose saves keep the chunk's
/// marker and the rejects in the store's metadata, in the rows' transaction. Related
/// objects' keys are looked up (`prepare`) before the write lock is taken.
final class SQLiteChunkWriter: BatchChunkWriter {
    let inserter: BatchInserter
    let keys: ImportMarker.Keys

    init(inserter: BatchInserter, keys: ImportMarker.Keys) {
        self.inserter = inserter
        self.keys = keys
    }

    /// SQLite writes on this thread; other workers map meanwhile.
    var overlapsMapping: Bool { false }

    var requests: any BatchRequestMaking { inserter }

    func prepare(_ request: BatchInsertRequest) throws -> BatchInserter.Prepared {
        try inserter.prepare(request)
    }

    func save(_ prepared: BatchInserter.Prepared, _ save: ChunkSave) throws -> BatchResult {
        var result = try BatchSave(inserter).run(prepared, author: "import run \(keys.run) chunk \(save.chunk.index)", after: { [keys] result in
            var metadata: [String: String] = [:]
            for reject in save.rejects { metadata[keys.rejectKey(chunk: save.chunk.index, index: reject.index)] = try reject.jsonLine() }
            for rejection in result.rejected {
                let index = rejection.record  // the record's index in its chunk, as the mapper numbered it
                let reject = ImportMarker.Reject(save.chunk, index: index, reason: rejection.reason,
                                                 text: ChunkLines.text(ofRecord: index, in: save.bytes))
                metadata[keys.rejectKey(chunk: save.chunk.index, index: index)] = try reject.jsonLine()
            }
            metadata[keys.chunkKey(save.chunk.index)] = String(save.done)
            if !save.members.isEmpty { metadata[keys.membersKey(chunk: save.chunk.index, done: save.done)] = try ImportMarker.jsonLine(save.members) }
            // Once a chunk: its first save records what its bytes were.
            if save.from == 0 { metadata[keys.sumKey(save.chunk.index)] = save.chunk.checksum }
            let outcomes = RecordOutcomes(written: result)
            if !outcomes.isEmpty { metadata[keys.outcomesKey(chunk: save.chunk.index, done: save.done)] = try ImportMarker.jsonLine(outcomes) }
            return metadata
        })
        result.rejected = save.rejects.map { BatchRejection(record: $0.index, reason: $0.reason) } + result.rejected
        return result
    }
}
