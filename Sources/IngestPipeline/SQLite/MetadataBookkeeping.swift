import IngestJSON
import IngestStore

/// A SQLite run's bookkeeping: the marker and rejects are metadata entries of the store.
final class MetadataBookkeeping: ChunkBookkeeping {
    let keys: ImportMarker.Keys

    init(keys: ImportMarker.Keys) { self.keys = keys }

    var run: Int { keys.run }

    func begin(_ chunk: ChunkInfo, done: Int) {}

    func stage(rejects: [ImportMarker.Reject], members: MemberCensus, outcomes: RecordOutcomes, _ chunk: ChunkInfo, done: Int,
               records: Int, in context: ObjectContext) throws {
        for reject in rejects { try context.setMetadata(reject, forKey: keys.rejectKey(chunk: chunk.index, index: reject.index)) }
        if !members.isEmpty { try context.setMetadata(members, forKey: keys.membersKey(chunk: chunk.index, done: done)) }
        if !outcomes.isEmpty { try context.setMetadata(outcomes, forKey: keys.outcomesKey(chunk: chunk.index, done: done)) }
        try context.setMetadata(done, forKey: keys.chunkKey(chunk.index))
        try context.setMetadata(chunk.checksum, forKey: keys.sumKey(chunk.index))
    }

    func committed(done: Int) {}
}
