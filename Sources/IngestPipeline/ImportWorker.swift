import Foundation
import IngestJSON
import IngestStore

/// One worker: a private context for its whole life, importing whole chunks in
/// batches of K records. A batch is parsed and mapped first; then the related objects
/// it names that the worker has not seen are looked up with one IN query per entity;
/// then its objects are made and saved with the chunk's marker in the same
/// transaction, and the context is reset so memory stays flat.
final class ImportWorker {
    let context: ObjectContext
    let spec: PipelineSpec
    let mapper: RecordMapper
    /// Related objects in the store, by entity and key: looked up once, then reached by
    /// ID without a query (a fault does no I/O).
    private var known: [EntityKey: ObjectID] = [:]
    /// Related objects this batch created; their IDs become permanent at the save.
    private var created: [EntityKey: ManagedObject] = [:]
    private let toManyRelationships: Set<RelationshipKey>

    struct RelationshipKey: Hashable {
        var entity: String
        var relationship: String
    }
    /// Keys per IN query: well under SQLite's bound-parameter limit.
    static let lookupBatch = 512
    /// Past this many cached keys the cache starts over, so memory stays bounded.
    static let knownLimit = 10_000
    /// Time spent per stage, summed over this worker's batches.
    private(set) var times = StageTimes()

    struct EntityKey: Hashable {
        var entity: String
        var key: [Value]
    }

    /// What one save committed.
    struct ChunkResult {
        var imported = 0
        var rejected = 0
    }

    init(context: ObjectContext, spec: PipelineSpec) {
        self.context = context
        self.spec = spec
        self.mapper = RecordMapper(spec: spec)
        toManyRelationships = Set(spec.model.entities.flatMap { entity in
            entity.relationships.filter(\.isToMany).map { RelationshipKey(entity: entity.name, relationship: $0.name) }
        })
        context.mergePolicy = .objectTrump
    }

    /// Imports the records of `chunk` after the first `skip` (done by an earlier run).
    /// Call inside the context's `perform`. `afterSave` runs after every save with the
    /// records and rejects it committed. `verified`: this run already checked the
    /// chunk's checksum.
    /// - Throws: `IOError`, `FeedError` for a damaged chunk file, `StoreError` when a
    ///   save fails, or whatever `afterSave` throws to stop the run.
    func importChunk(_ chunk: ChunkInfo, directory: String, skip: Int, saveEvery: Int, verified: Bool = false,
                     afterSave: (ChunkResult) throws -> Void) throws {
        var batch: [MappedObject] = []
        batch.reserveCapacity(saveEvery)
        var batchRejects = 0
        var index = 0
        var sinceSave = 0
        let path = directory + "/" + chunk.file
        // The scanner trusts that the splitter's yajl validated these bytes: make sure they are those bytes.
        guard try verified || Splitter.fullHash(path) == chunk.checksum else {
            throw ImportError("\(path) changed after the split (its checksum is not the manifest's); delete it and run ingest resume to make it again from the feed")
        }
        let reader = try FeedReader(path: path, options: FeedOptions(shape: .ndjson))
        func flush(done: Int) throws {
            try save(batch, chunk, done: done)
            let saved = ChunkResult(imported: batch.count, rejected: batchRejects)
            batch.removeAll(keepingCapacity: true)
            batchRejects = 0
            sinceSave = 0
            try afterSave(saved)
        }
        do {
            try reader.read { record in
                defer { index += 1 }
                guard index >= skip else { return }
                let started = StageTimes.now()
                do {
                    let json = try JSONValue.parse(record.bytes, keeping: mapper.selection)
                    let parsed = StageTimes.now()
                    times.parse += parsed - started
                    batch.append(try mapper.map(json))
                    times.map += StageTimes.now() - parsed
                } catch let error as CoercionError {
                    try reject(chunk, index, record.bytes, error.message)
                    batchRejects += 1
                } catch let error as FeedError {
                    try reject(chunk, index, record.bytes, error.message)
                    batchRejects += 1
                }
                sinceSave += 1
                if sinceSave == saveEvery { try flush(done: index + 1) }
            }
        } catch let error as FeedError where error.kind == .emptyFeed {
            // An empty chunk file: nothing to import.
        }
        if sinceSave > 0 || (skip == 0 && index == 0) { try flush(done: index) }
    }

    private func reject(_ chunk: ChunkInfo, _ index: Int, _ bytes: UnsafeRawBufferPointer, _ reason: String) throws {
        let entry = ImportMarker.Reject(chunk, index: index, reason: reason, text: String(decoding: bytes, as: UTF8.self))
        try context.setMetadata(entry, forKey: ImportMarker.rejectKey(chunk: chunk.index, index: index))
    }

    private func save(_ batch: [MappedObject], _ chunk: ChunkInfo, done: Int) throws {
        let started = StageTimes.now()
        try lookUpRelated(in: batch)
        for mapped in batch { try insert(mapped) }
        let made = StageTimes.now()
        times.map += made - started
        try context.setMetadata(done, forKey: ImportMarker.chunkKey(chunk.index))
        try context.save()
        if known.count > Self.knownLimit { known.removeAll(keepingCapacity: true) }
        for (key, object) in created { known[key] = object.objectID }
        created.removeAll(keepingCapacity: true)
        context.reset()
        times.save += StageTimes.now() - made
    }

    // MARK: - Objects

    private func insert(_ mapped: MappedObject) throws {
        let root = context.insert(mapped.entity)
        fill(root, mapped)
        try relate(root, mapped)
    }

    private func fill(_ object: ManagedObject, _ mapped: MappedObject) {
        for (position, value) in zip(mapped.positions, mapped.slots) { object.setValue(value, forAttributeAt: position) }
    }

    private func relate(_ object: ManagedObject, _ mapped: MappedObject) throws {
        for (relationship, targets) in mapped.relations {
            let toMany = toManyRelationships.contains(RelationshipKey(entity: mapped.entity, relationship: relationship))
            for target in targets {
                let related = try findOrCreate(target)
                if toMany { object.addObject(related, toKey: relationship) } else { object.setObject(related, forKey: relationship) }
            }
        }
    }

    /// The related object with `mapped`'s key: made this batch, known from the store, or
    /// new (filled from `mapped`, its own relationships too). Keys not yet known were
    /// looked up for the whole batch by `lookUpRelated(in:)`.
    private func findOrCreate(_ mapped: MappedObject) throws -> ManagedObject {
        let key = EntityKey(entity: mapped.entity, key: mapped.key)
        if let object = created[key] { return object }
        if let id = known[key] { return context.object(with: id) }
        let object = context.insert(mapped.entity)
        fill(object, mapped)
        created[key] = object
        try relate(object, mapped)
        return object
    }

    /// One query per entity (per `lookupBatch` keys) for the batch's related keys that
    /// are neither cached nor made this batch.
    private func lookUpRelated(in batch: [MappedObject]) throws {
        var missing: [String: Set<[Value]>] = [:]
        func collect(_ mapped: MappedObject) {
            for (_, targets) in mapped.relations {
                for target in targets {
                    if known[EntityKey(entity: target.entity, key: target.key)] == nil {
                        missing[target.entity, default: []].insert(target.key)
                    }
                    collect(target)
                }
            }
        }
        batch.forEach(collect)
        for (entity, keys) in missing {
            let keyNames = spec.mappings[entity]!.key
            let keys = Array(keys)
            for start in stride(from: 0, to: keys.count, by: Self.lookupBatch) {
                let slice = keys[start..<min(start + Self.lookupBatch, keys.count)]
                let predicate: QueryPredicate
                if keyNames.count == 1 {
                    // Lists padded to a power of two: a handful of distinct statements for
                    // the connections' statement caches, not one per list length.
                    var list = slice.map { Optional($0[0]) }
                    let size = max(8, 1 << (Int.bitWidth - (list.count - 1).leadingZeroBitCount))
                    list += repeatElement(list[0], count: size - list.count)
                    predicate = .comparison(Comparison(.keyPath(keyNames), .in, .list(list)))
                } else {
                    predicate = .or(slice.map { key in
                        .and(zip(keyNames, key).map { .comparison(Comparison(.keyPath([$0]), .equal, .value($1))) })
                    })
                }
                let request = FetchRequest(entity, predicate: predicate, includesPendingChanges: false)
                for object in try context.fetch(request) {
                    let key = keyNames.map { object[$0] ?? .string("") }
                    known[EntityKey(entity: entity, key: key)] = object.objectID
                }
            }
        }
    }
}
