import Foundation
import IngestJSON
import IngestStore

/// One worker: a private context for its whole life, importing whole chunks, saving
/// every K records (with the chunk's marker in the same transaction) and resetting
/// after each save so memory stays flat.
final class ImportWorker {
    let context: ObjectContext
    let spec: PipelineSpec
    let mapper: RecordMapper
    /// Related objects already in the store, by entity and key: found once, then
    /// reached by ID without a query (a fault does no I/O).
    private var known: [EntityKey: ObjectID] = [:]
    /// Related objects this batch created; their IDs become permanent at the save.
    private var created: [EntityKey: ManagedObject] = [:]

    struct EntityKey: Hashable {
        var entity: String
        var key: [Value]
    }

    struct ChunkResult {
        var imported = 0
        var rejected = 0
    }

    init(context: ObjectContext, spec: PipelineSpec) {
        self.context = context
        self.spec = spec
        self.mapper = RecordMapper(spec: spec)
        context.mergePolicy = .objectTrump
    }

    /// Imports the records of `chunk` after the first `skip` (done by an earlier run).
    /// Call inside the context's `perform`.
    /// - Throws: `IOError`, `FeedError` for a damaged chunk file, `StoreError` when a
    ///   save fails, or whatever `afterSave` throws to stop the run.
    func importChunk(_ chunk: ChunkInfo, directory: String, skip: Int, saveEvery: Int,
                     afterSave: () throws -> Void) throws -> ChunkResult {
        var result = ChunkResult()
        var index = 0
        var sinceSave = 0
        let reader = try FeedReader(path: directory + "/" + chunk.file, options: FeedOptions(shape: .ndjson))
        do {
            try reader.read { record in
                defer { index += 1 }
                guard index >= skip else { return }
                do {
                    let json = try JSONValue.parse(record.bytes)
                    try apply(try mapper.map(json))
                    result.imported += 1
                } catch let error as CoercionError {
                    try reject(chunk, index, record.bytes, error.message)
                    result.rejected += 1
                } catch let error as FeedError {
                    try reject(chunk, index, record.bytes, error.message)
                    result.rejected += 1
                }
                sinceSave += 1
                if sinceSave == saveEvery {
                    try commit(chunk, done: index + 1)
                    sinceSave = 0
                    try afterSave()
                }
            }
        } catch let error as FeedError where error.kind == .emptyFeed {
            // An empty chunk file: nothing to import.
        }
        if sinceSave > 0 || (skip == 0 && index == 0) {
            try commit(chunk, done: index)
            try afterSave()
        }
        return result
    }

    private func reject(_ chunk: ChunkInfo, _ index: Int, _ bytes: UnsafeRawBufferPointer, _ reason: String) throws {
        let entry = ImportMarker.Reject(chunk: chunk.index, index: index, record: chunk.firstRecord + index, reason: reason,
                                        text: String(decoding: bytes, as: UTF8.self))
        try context.setMetadata(entry, forKey: ImportMarker.rejectKey(chunk: chunk.index, index: index))
    }

    private func commit(_ chunk: ChunkInfo, done: Int) throws {
        try context.setMetadata(done, forKey: ImportMarker.chunkKey(chunk.index))
        try context.save()
        for (key, object) in created { known[key] = object.objectID }
        created.removeAll(keepingCapacity: true)
        context.reset()
    }

    // MARK: - Objects

    private func apply(_ mapped: MappedObject) throws {
        let root = context.insert(mapped.entity)
        for (name, value) in mapped.values { root[name] = value }
        let entity = spec.model.entity(mapped.entity)!
        for (relationship, targets) in mapped.related {
            let toMany = entity.relationship(relationship)!.isToMany
            for target in targets {
                let object = try findOrCreate(target)
                if toMany { root.addObject(object, toKey: relationship) } else { root.setObject(object, forKey: relationship) }
            }
        }
    }

    private func findOrCreate(_ mapped: MappedObject) throws -> ManagedObject {
        let key = EntityKey(entity: mapped.entity, key: mapped.key)
        if let object = created[key] { return object }
        if let id = known[key] { return context.object(with: id) }
        let mapping = spec.mappings[mapped.entity]!
        let conditions = zip(mapping.key, mapped.key).map { name, value in
            QueryPredicate.comparison(Comparison(.keyPath([name]), .equal, .value(value)))
        }
        let request = FetchRequest(mapped.entity, predicate: conditions.count == 1 ? conditions[0] : .and(conditions),
                                   fetchLimit: 1, includesPendingChanges: false)
        if let id = try context.fetchObjectIDs(request).first {
            known[key] = id
            return context.object(with: id)
        }
        let object = context.insert(mapped.entity)
        for (name, value) in mapped.values { object[name] = value }
        created[key] = object
        return object
    }
}
