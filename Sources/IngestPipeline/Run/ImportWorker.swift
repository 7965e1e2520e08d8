import Foundation
import IngestJSON
import Logging
import IngestStore

/// One worker: a private context for its whole life, importing whole chunks in
/// batches of K records. A batch is parsed and mapped first; then the objects it names
/// that the worker has not seen (its records' own and their related ones) are looked up
/// with one IN query per entity; then each record is applied by its entities'
/// `ConflictRule`s and the batch is saved with the chunk's marker in the same
/// transaction, and the context is reset so memory stays flat.
///
/// A save that fails because of what a record says (a required value, a deny rule, a
/// uniqueness or constraint failure) is made again one record at a time: the records
/// that fail alone are rejected with the reason, and the rest are imported.
final class ImportWorker {
    let context: ObjectContext
    let spec: PipelineSpec
    let mapper: RecordMapper
    /// Objects in the store, by entity and key: looked up once, then reached by
    /// ID without a query (a fault does no I/O).
    private var known: [EntityKey: ObjectID] = [:]
    /// Objects this batch made or touched; their IDs become permanent at the save.
    private var created: [EntityKey: ManagedObject] = [:]
    /// Objects of this batch that are placeholders no record described yet: stored ones
    /// (read from the store for each batch: another worker may have filled them since) and
    /// ones this batch made from a reference. The first record that describes one fills it
    /// as `update` writes, whatever its entity's rule.
    private var placeholders = Set<ObjectIdentifier>()
    /// Entities some relationship leads to: only their objects can be placeholders.
    private let referable: Set<String>
    private let toManyRelationships: Set<RelationshipKey>
    private let toManyRules: [RelationshipKey: ToManyRule]
    /// Ordered to-manys: a record's list gives their order too.
    private let orderedRelationships: Set<RelationshipKey>
    /// Each entity's first row made by this run: an older row met again is an update of
    /// the store, a newer one a duplicate within the feed.
    private let firstRowOfRun: [String: Int64]

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
        /// Of the records imported: what happened to each record's own object.
        var outcomes = RecordOutcomes()
        /// The save's time, and the part spent holding the write lock (batch path).
        var seconds = 0.0
        var lockedSeconds = 0.0
    }

    var logger = Logger(label: "ingest.import", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A mapped record waiting for its batch's save.
    private struct Pending {
        var index: Int
        var mapped: MappedObject
        var text: String
    }

    /// Entities whose rows carry lineage (`PipelineSpec.lineage`), and the record being applied.
    private let lineage: Set<String>
    private var position: (chunk: Int64, record: Int64) = (0, 0)

    /// Where each save's marker and rejects go, in the save's transaction.
    let bookkeeping: any ChunkBookkeeping
    /// What the selective parse reads, for counting what it leaves out (nil: it reads all).
    private var membersPlan: JSONCapturePlan?
    private let members = MemberCounter()

    /// A worker whose saves keep the marker and rejects in the store's metadata, under `keys`.
    convenience init(context: ObjectContext, spec: PipelineSpec, keys: ImportMarker.Keys, firstRowOfRun: [String: Int64] = [:]) {
        self.init(context: context, spec: spec, bookkeeping: MetadataBookkeeping(keys: keys), firstRowOfRun: firstRowOfRun)
    }

    @_optimize(none)
    init(context: ObjectContext, spec: PipelineSpec, bookkeeping: any ChunkBookkeeping, firstRowOfRun: [String: Int64] = [:]) {
        self.context = context
        self.bookkeeping = bookkeeping
        self.spec = spec
        self.mapper = RecordMapper(spec: spec)
        membersPlan = mapper.selection.keepsAll ? nil : JSONCapturePlan(reading: mapper.selection)
        self.firstRowOfRun = firstRowOfRun
        lineage = spec.lineage ? Set(spec.model.entities.map(\.name).filter(spec.model.hasLineage)) : []
        toManyRelationships = Set(spec.model.entities.flatMap { entity in
            entity.relationships.filter(\.isToMany).map { RelationshipKey(entity: entity.name, relationship: $0.name) }
        })
        var toManyRules: [RelationshipKey: ToManyRule] = [:]
        for mapping in spec.mappings.values {
            for relationship in mapping.relationships {
                toManyRules[RelationshipKey(entity: mapping.entity, relationship: relationship.relationship)] = relationship.toMany
            }
        }
        self.toManyRules = toManyRules
        referable = Set(spec.model.entities.flatMap { $0.relationships.map(\.destination) })
        orderedRelationships = Set(spec.model.entities.flatMap { entity in
            entity.relationships.filter(\.isOrdered).map { RelationshipKey(entity: entity.name, relationship: $0.name) }
        })
        context.mergePolicy = .objectTrump
    }

    /// Imports the records of a chunk held in memory (`bytes`, one record a line, as the
    /// split wrote them and checked by the caller) after the first `skip` (done by an
    /// earlier save). Call inside the context's `perform`. The whole chunk is mapped, then
    /// `waitForTurn` runs (commits go in feed order on SQLite), then the batches are saved,
    /// each with the chunk's marker; `afterSave` runs after every save with the records
    /// and rejects it committed.
    /// - Throws: `StoreError` when a save fails for a reason no record explains (a full
    ///   disk, say), what the bookkeeping throws (`ChunkTakenOver`), or whatever
    ///   `waitForTurn` or `afterSave` throws to stop the run.
    func importChunk(_ chunk: ChunkInfo, bytes: [UInt8], skip: Int, saveEvery: Int, waitForTurn: () throws -> Void = {},
                     afterSave: (ChunkResult) throws -> Void) throws {
        try importRecords(chunk, skip: skip, saveEvery: saveEvery, waitForTurn: waitForTurn, afterSave: afterSave) { take in
            try bytes.withUnsafeBytes { buffer in
                try ChunkLines.forEach(in: bytes, from: skip) { range, index in
                    try take(UnsafeRawBufferPointer(rebasing: buffer[range]), index)
                }
            }
            return chunk.records
        }
    }

    /// Maps the records `records` hands to its `take` (bytes and index, from `skip` on;
    /// it returns how many records the chunk has), then saves them in batches.
    private func importRecords(_ chunk: ChunkInfo, skip: Int, saveEvery: Int, waitForTurn: () throws -> Void,
                               afterSave: (ChunkResult) throws -> Void,
                               records: ((UnsafeRawBufferPointer, Int) throws -> Void) throws -> Int) throws {
        var batch: [Pending] = []
        batch.reserveCapacity(saveEvery)
        var rejects: [ImportMarker.Reject] = []
        var sinceSave = 0
        // The whole chunk is mapped before its first save: saves wait for earlier chunks.
        var batches: [(batch: [Pending], rejects: [ImportMarker.Reject], members: MemberCensus, done: Int)] = []
        func flush(done: Int) {
            batches.append((batch, rejects, members.take(), done))
            batch.removeAll(keepingCapacity: false)
            rejects.removeAll(keepingCapacity: false)
            sinceSave = 0
        }
        let total = try records { bytes, index in
            let started = StageTimes.now()
            let text = { String(decoding: bytes, as: UTF8.self) }
            if membersPlan != nil { members.count(bytes, plan: &membersPlan!) }
            do {
                let json = try JSONValue.parse(bytes, keeping: mapper.selection)
                let parsed = StageTimes.now()
                times.parse += parsed - started
                batch.append(Pending(index: index, mapped: try mapper.map(json), text: text()))
                times.map += StageTimes.now() - parsed
            } catch let error as CoercionError {
                rejects.append(ImportMarker.Reject(chunk, index: index, reason: error.message, text: text()))
            } catch let error as FeedError {
                rejects.append(ImportMarker.Reject(chunk, index: index, reason: error.message, text: text()))
            }
            sinceSave += 1
            if sinceSave == saveEvery { flush(done: index + 1) }
        }
        if sinceSave > 0 || (skip == 0 && total == 0) { flush(done: total) }
        let waiting = StageTimes.now()
        try waitForTurn()
        times.waiting += StageTimes.now() - waiting
        for saving in batches {
            let started = StageTimes.now()
            var saved = try save(saving.batch, rejects: saving.rejects, members: saving.members, chunk, done: saving.done)
            saved.seconds = StageTimes.now() - started
            try afterSave(saved)
        }
    }

    /// Saves the batch with its rejects and the chunk's marker; when the save fails
    /// because of some record, saves again one record at a time.
    private func save(_ batch: [Pending], rejects: [ImportMarker.Reject], members: MemberCensus, _ chunk: ChunkInfo,
                      done: Int) throws -> ChunkResult {
        let started = StageTimes.now()
        defer { times.save += StageTimes.now() - started }
        do {
            return try write(batch, rejects: rejects, members: members, chunk, done: done)
        } catch let error as StoreError where error.isAboutRecords {
            discard()
            logger.debug("save refused because of a record: saving the batch one record at a time",
                         metadata: ["chunk": "\(chunk.index)", "records": "\(batch.count)", "reason": "\(error)"])
        }
        var result = ChunkResult()
        var staged = rejects
        // The census goes with the first save that commits.
        var census = members
        for (number, pending) in batch.enumerated() {
            do {
                let saved = try write([pending], rejects: staged, members: census, chunk,
                                      done: number == batch.count - 1 ? done : pending.index + 1)
                staged.removeAll()
                census = MemberCensus()
                result.imported += saved.imported
                result.rejected += saved.rejected
                result.outcomes = result.outcomes + saved.outcomes
            } catch let error as StoreError where error.isAboutRecords {
                discard()
                staged.append(ImportMarker.Reject(chunk, index: pending.index, reason: reason(error, pending.mapped), text: pending.text))
                logger.trace("record rejected at save", metadata: ["chunk": "\(chunk.index)", "index": "\(pending.index)",
                                                                    "reason": "\(staged[staged.count - 1].reason)"])
            }
        }
        if !staged.isEmpty {
            try bookkeeping.stage(rejects: staged, members: census, outcomes: RecordOutcomes(), chunk, done: done, records: staged.count, in: context)
            context.transactionAuthor = "import run \(bookkeeping.run) chunk \(chunk.index)"
            try context.save()
            bookkeeping.committed(done: done)
            context.reset()
            result.rejected += staged.count
        }
        return result
    }

    /// Applies the records and saves them with `rejects` and the marker in one transaction.
    private func write(_ batch: [Pending], rejects: [ImportMarker.Reject], members: MemberCensus, _ chunk: ChunkInfo,
                       done: Int) throws -> ChunkResult {
        var result = ChunkResult(rejected: rejects.count)
        var staged = rejects
        try lookUp(in: batch.map(\.mapped))
        try findPlaceholders(in: batch.map(\.mapped))
        for pending in batch {
            // A record that names a new object by key alone, lacking a required value, is rejected
            // for that (at the save, with its reason) before any rule is weighed, as the batch path does.
            if !makesIncompleteObject(pending.mapped), let reason = conflict(pending.mapped) {
                staged.append(ImportMarker.Reject(chunk, index: pending.index, reason: reason, text: pending.text))
                result.rejected += 1
                continue
            }
            var changed = false
            position = (Int64(chunk.index), Int64(pending.index))
            let (_, outcome) = try apply(pending.mapped, changed: &changed)
            result.outcomes.count(inserted: outcome == .inserted, changed: changed, duplicate: outcome == .duplicate)
            result.imported += 1
        }
        try bookkeeping.stage(rejects: staged, members: members, outcomes: result.outcomes, chunk, done: done,
                              records: batch.count + rejects.count, in: context)
        context.transactionAuthor = "import run \(bookkeeping.run) chunk \(chunk.index)"
        try context.save()
        bookkeeping.committed(done: done)
        if known.count > Self.knownLimit { known.removeAll(keepingCapacity: true) }
        for (key, object) in created { known[key] = object.objectID }
        created.removeAll(keepingCapacity: true)
        placeholders.removeAll()
        context.reset()
        return result
    }

    /// Sets the lineage attributes of `object` (when its entity has them) to the record being applied.
    private func stampLineage(_ object: ManagedObject) {
        guard lineage.contains(object.entityName) else { return }
        object[Model.lineageRun] = .int(Int64(bookkeeping.run))
        object[Model.lineageChunk] = .int(position.chunk)
        object[Model.lineageRecord] = .int(position.record)
    }

    /// Drops what the context holds of a save that failed.
    func discard() {
        context.reset()
        created.removeAll(keepingCapacity: true)
        placeholders.removeAll()
    }

    /// A failed save's reason for one record, in model names.
    private func reason(_ error: StoreError, _ mapped: MappedObject) -> String {
        switch error {
        case .validation(let problems):
            let message = problems.map(\.description).joined(separator: "; ")
            // "Event 17: name is required" for an Event the record named by key alone says why.
            guard problems.count == 1, isNamedByKeyAlone(problems[0], in: mapped) else { return message }
            return message + " (the record gives only its key)"
        case .uniquenessConflict(let problems): return problems.joined(separator: "; ")
        default: return error.description
        }
    }

    /// Whether `problem`'s object is one the record names by its key alone (`"event": 17`).
    private func isNamedByKeyAlone(_ problem: ValidationProblem, in mapped: MappedObject) -> Bool {
        mapped.relations.contains { relation in
            relation.objects.contains { target in
                (target.byKeyAlone && target.entity == problem.entity && !target.key.isEmpty && target.key == problem.key)
                    || isNamedByKeyAlone(problem, in: target)
            }
        }
    }

    // MARK: - Objects

    /// What applying a record did to its own object.
    enum Outcome {
        case inserted, updated, duplicate
    }

    /// The object `mapped` describes: found by key (made this batch or stored) and
    /// written by its entity's rule, or made new; its related objects likewise.
    /// `changed` becomes true when a stored object changes.
    private func apply(_ mapped: MappedObject, changed: inout Bool) throws -> (ManagedObject, Outcome) {
        let mapping = spec.mappings[mapped.entity]!
        let entityKey = mapping.key.isEmpty ? nil : EntityKey(entity: mapped.entity, key: mapped.key)
        var found: ManagedObject?
        if let entityKey {
            if let object = created[entityKey] { found = object } else if let id = known[entityKey] { found = context.object(with: id) }
        }
        guard let object = found else {
            let object = context.insert(mapped.entity)
            for index in mapped.slots.indices { object.setValue(mapped.slots[index], forAttributeAt: mapped.positions[index]) }
            stampLineage(object)
            if let entityKey { created[entityKey] = object }
            if mapped.byKeyAlone {
                placeholders.insert(ObjectIdentifier(object))
                context.markPlaceholder(object)
            }
            try relate(object, mapped, isNew: true, rule: mapping.onConflict, changed: &changed)
            return (object, .inserted)
        }
        if let entityKey { created[entityKey] = object }
        let id = found!.objectID
        let outcome: Outcome = id.isTemporary || (id.primaryKey ?? 0) >= firstRowOfRun[mapped.entity, default: .max] ? .duplicate : .updated
        // A reference names an object; it does not describe it.
        if mapped.byKeyAlone { return (object, outcome) }
        var rule = mapping.onConflict
        var filled = false
        if placeholders.remove(ObjectIdentifier(object)) != nil {
            rule = .update
            filled = true
            context.unmarkPlaceholder(object)
        }
        guard rule != .keepExisting else {
            try applyStored(relatedTo: mapped)
            return (object, outcome)
        }
        // This object's own changes: its lineage names the record that last changed it.
        var own = false
        for index in mapped.slots.indices where rule == .replace || mapped.given[index] {
            let name = mapped.names[index]
            if object[name] != mapped.slots[index] {
                own = true
                object.setValue(mapped.slots[index], forAttributeAt: mapped.positions[index])
            }
        }
        try relate(object, mapped, isNew: false, rule: rule, changed: &own)
        if own || filled { stampLineage(object) }
        if own { changed = true }
        return (object, outcome)
    }

    /// Under an object kept as it is (`keepExisting`), whose links stay as they were: its
    /// related objects that are stored meet their own rules (as on the batch path), and
    /// new ones are not made, as nothing would link them.
    private func applyStored(relatedTo mapped: MappedObject) throws {
        for (_, targets) in mapped.relations {
            for target in targets {
                let mapping = spec.mappings[target.entity]!
                let entityKey = mapping.key.isEmpty ? nil : EntityKey(entity: target.entity, key: target.key)
                if let entityKey, created[entityKey] != nil || known[entityKey] != nil {
                    var ignored = false
                    _ = try apply(target, changed: &ignored)
                } else {
                    try applyStored(relatedTo: target)
                }
            }
        }
    }

    private func relate(_ object: ManagedObject, _ mapped: MappedObject, isNew: Bool, rule: ConflictRule, changed: inout Bool) throws {
        var given = Set<String>()
        for (relationship, targets) in mapped.relations {
            given.insert(relationship)
            let key = RelationshipKey(entity: mapped.entity, relationship: relationship)
            let related = try targets.map { target -> ManagedObject in
                var ignored = false
                return try apply(target, changed: &ignored).0
            }
            if toManyRelationships.contains(key) {
                if !isNew && toManyRules[key] == .replace {
                    let keep = Set(related.map(ObjectIdentifier.init))
                    for member in object.objects(forKey: relationship) where !keep.contains(ObjectIdentifier(member)) {
                        object.removeObject(member, fromKey: relationship)
                        changed = true
                    }
                }
                let members = isNew ? [] : Set(object.objects(forKey: relationship).map(ObjectIdentifier.init))
                for member in related where !members.contains(ObjectIdentifier(member)) {
                    object.addObject(member, toKey: relationship)
                    if !isNew { changed = true }
                }
                // Replaced, an ordered relationship takes the record's order as well.
                if orderedRelationships.contains(key), !isNew, toManyRules[key] == .replace {
                    // A member listed twice takes its first place.
                    var seen = Set<ObjectIdentifier>()
                    let wanted = related.filter { seen.insert(ObjectIdentifier($0)).inserted }
                    if object.objects(forKey: relationship).map(ObjectIdentifier.init) != wanted.map(ObjectIdentifier.init) {
                        for (index, member) in wanted.enumerated() { object.insertObject(member, at: index, forKey: relationship) }
                        changed = true
                    }
                }
            } else if let target = related.first {
                if !isNew && object.object(forKey: relationship) !== target { changed = true }
                object.setObject(target, forKey: relationship)
            }
        }
        // Replace: a mapped to-one the record does not give is cleared.
        guard !isNew, rule == .replace else { return }
        for relationship in spec.mappings[mapped.entity]!.relationships where !given.contains(relationship.relationship)
            && !toManyRelationships.contains(RelationshipKey(entity: mapped.entity, relationship: relationship.relationship)) {
            if object.object(forKey: relationship.relationship) != nil {
                object.setObject(nil, forKey: relationship.relationship)
                changed = true
            }
        }
    }

    /// Under the `reject` rule: why the record is rejected (an object it describes is
    /// stored, or made earlier this batch, with other values), or nil.
    private func conflict(_ mapped: MappedObject) -> String? {
        let mapping = spec.mappings[mapped.entity]!
        if mapping.onConflict == .reject, !mapping.key.isEmpty, !mapped.byKeyAlone {
            let entityKey = EntityKey(entity: mapped.entity, key: mapped.key)
            // A placeholder differs from nothing: the record fills it.
            if let object = created[entityKey] ?? known[entityKey].map({ context.object(with: $0) }),
               !placeholders.contains(ObjectIdentifier(object)) {
                let key = mapped.key.map(\.description).joined(separator: ", ")
                if let index = mapped.slots.indices.first(where: { mapped.given[$0] && object[mapped.names[$0]] != mapped.slots[$0] }) {
                    return ConflictRule.rejectReason(entity: mapped.entity, key: key, field: mapped.names[index],
                                                     stored: object[mapped.names[index]], given: mapped.slots[index])
                }
                if let relationship = differingRelationship(object, mapped) {
                    return ConflictRule.rejectReason(entity: mapped.entity, key: key, relationship: relationship)
                }
            }
        }
        for (_, targets) in mapped.relations {
            for target in targets { if let reason = conflict(target) { return reason } }
        }
        return nil
    }

    /// Whether `mapped` names, by its key alone, an object that is not stored yet and whose
    /// entity requires a value the key does not give: its save would fail validation.
    private func makesIncompleteObject(_ mapped: MappedObject) -> Bool {
        for (_, targets) in mapped.relations {
            for target in targets {
                if target.byKeyAlone, !target.key.isEmpty {
                    let key = EntityKey(entity: target.entity, key: target.key)
                    if created[key] == nil, known[key] == nil, let entity = spec.model.entity(target.entity) {
                        let keyNames = Set(spec.mappings[target.entity]?.key ?? [])
                        if entity.attributes.contains(where: { !$0.isOptional && $0.defaultValue == nil && !keyNames.contains($0.name) }) {
                            return true
                        }
                    }
                }
                if makesIncompleteObject(target) { return true }
            }
        }
        return false
    }

    /// The first relationship a record gives that would change the stored `object`: a
    /// to-one to another object (or to a new one), a to-many with other members.
    private func differingRelationship(_ object: ManagedObject, _ mapped: MappedObject) -> String? {
        for (relationship, targets) in mapped.relations {
            let found = targets.map { target -> ManagedObject? in
                let keyNames = spec.mappings[target.entity]!.key
                guard !keyNames.isEmpty else { return nil }
                let key = EntityKey(entity: target.entity, key: target.key)
                return created[key] ?? known[key].map { context.object(with: $0) }
            }
            // A related object that is not stored yet is new: linking it changes the object.
            guard found.allSatisfy({ $0 != nil }) else { return relationship }
            let wanted = Set(found.map { ObjectIdentifier($0!) })
            if toManyRelationships.contains(RelationshipKey(entity: mapped.entity, relationship: relationship)) {
                let members = Set(object.objects(forKey: relationship).map(ObjectIdentifier.init))
                let rule = toManyRules[RelationshipKey(entity: mapped.entity, relationship: relationship)]
                if rule == .replace ? members != wanted : !wanted.isSubset(of: members) { return relationship }
            } else if object.object(forKey: relationship).map(ObjectIdentifier.init) != wanted.first {
                return relationship
            }
        }
        return nil
    }

    /// Reads which stored objects the batch describes are placeholders (`placeholders`).
    /// Under `update`, filling one is what the rule does anyway: it is only unmarked.
    private func findPlaceholders(in batch: [MappedObject]) throws {
        placeholders.removeAll()
        var candidates: [ObjectID] = []
        var seen = Set<ObjectID>()
        func collect(_ mapped: MappedObject) {
            if !mapped.byKeyAlone, referable.contains(mapped.entity), !mapped.key.isEmpty,
               let id = known[EntityKey(entity: mapped.entity, key: mapped.key)], seen.insert(id).inserted {
                candidates.append(id)
            }
            for (_, targets) in mapped.relations { targets.forEach(collect) }
        }
        batch.forEach(collect)
        guard !candidates.isEmpty else { return }
        for id in try context.placeholders(among: candidates) {
            placeholders.insert(ObjectIdentifier(context.object(with: id)))
        }
    }

    /// One query per entity (per `lookupBatch` keys) for the batch's keys (its records'
    /// own and related objects') that are not cached.
    private func lookUp(in batch: [MappedObject]) throws {
        var missing: [String: Set<[Value]>] = [:]
        func collect(_ mapped: MappedObject) {
            if !mapped.key.isEmpty, known[EntityKey(entity: mapped.entity, key: mapped.key)] == nil {
                missing[mapped.entity, default: []].insert(mapped.key)
            }
            for (_, targets) in mapped.relations { targets.forEach(collect) }
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
                    predicate = .comparison(PredicateComparison(.keyPath(keyNames), .in, .list(list)))
                } else {
                    predicate = .or(slice.map { key in
                        .and(zip(keyNames, key).map { .comparison(PredicateComparison(.keyPath([$0]), .equal, .value($1))) })
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

extension StoreError {
    /// A save failed because of what its objects say, not because of the store: making
    /// the save again without the record that says it succeeds.
    var isAboutRecords: Bool { isAboutData }
}
