
/// The objects of a batched fetch: the count is known at once (only the IDs were read),
/// and each object's row is read with the rest of its batch when an index in that
/// batch is first touched (the WWDC talk's "count says 5,280, 10 are loaded").
///
/// Use it on its context's queue, like the objects it hands out.
public struct FetchResults: RandomAccessCollection {
    private let storage: Storage

    final class Storage {
        unowned let context: ObjectContext
        let ids: [ObjectID]
        let info: EntityInfo
        let batchSize: Int
        var loadedBatches = Set<Int>()

        init(context: ObjectContext, ids: [ObjectID], info: EntityInfo, batchSize: Int) {
            self.context = context
            self.ids = ids
            self.info = info
            self.batchSize = batchSize
        }
    }

    init(context: ObjectContext, ids: [ObjectID], info: EntityInfo, batchSize: Int) {
        storage = Storage(context: context, ids: ids, info: info, batchSize: Swift.max(1, batchSize))
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.ids.count }

    /// How many batches have been read so far.
    public var loadedBatchCount: Int { storage.loadedBatches.count }

    public subscript(position: Int) -> ManagedObject {
        let context = storage.context
        context.checkAccess()
        let batch = position / storage.batchSize
        if !storage.loadedBatches.contains(batch) {
            let start = batch * storage.batchSize
            let slice = Array(storage.ids[start..<Swift.min(storage.ids.count, start + storage.batchSize)])
            // A failed read leaves the faults to load one by one, as a fault always can.
            try? context.preloadRows(slice, storage.info)
            storage.loadedBatches.insert(batch)
        }
        return context.object(with: storage.ids[position])
    }
}

extension ObjectContext {
    /// The request's objects, read in batches of `request.fetchBatchSize` as they are used.
    /// - Throws: as `fetch(_:)`.
    public func fetchResults(_ request: FetchRequest) throws -> FetchResults {
        checkAccess()
        let ids = try fetchObjectIDs(request)
        let batch = request.fetchBatchSize > 0 ? request.fetchBatchSize : max(1, ids.count)
        return FetchResults(context: self, ids: ids, info: entityInfo(request.entityName), batchSize: batch)
    }

    /// Reads the rows of these objects (those still faults without a row) in as few
    /// queries as the SQLite variable limit allows.
    func preloadRows(_ ids: [ObjectID], _ info: EntityInfo) throws {
        // A child's faults are filled from its parent, one by one; a row the parent no longer has stays a fault.
        if parentContext != nil {
            for id in ids {
                let object = self.object(with: id)
                guard object.isFault, !object.preloaded, let row = try rowThroughParent(id) else { continue }
                object.apply(row)
            }
            return
        }
        let wanted = ids.filter { id in
            guard let object = registered[id] else { return id.primaryKey != nil }
            return object.isFault && !object.preloaded && id.primaryKey != nil
        }
        guard !wanted.isEmpty else { return }
        for start in stride(from: 0, to: wanted.count, by: 500) {
            let part = wanted[start..<min(wanted.count, start + 500)]
            let sql = "SELECT \(info.selectColumns) FROM \(info.table) WHERE \"_pk\" IN (\(part.map { _ in "?" }.joined(separator: ",")))"
            _ = try coordinator.reading { db in try materialize(db, sql, part.map { .int($0.primaryKey!) }, info) }
            rowQueries += 1
        }
    }

    /// Reads, for every object given, the objects at the end of `keyPath` (relationships
    /// only), one query per relationship on the path, not one per object.
    /// `entity` is the fetch's: its objects may be of subentities, whose inherited
    /// relationships sit at the same positions.
    func prefetch(_ keyPath: [String], for objects: [ManagedObject], of entity: EntityInfo) throws {
        var owners = objects
        var info = entity
        for key in keyPath {
            guard !owners.isEmpty else { return }
            guard let index = info.relationshipIndex[key] else {
                throw QueryPredicateError("entity \(info.name) has no relationship '\(key)' to prefetch", column: 0)
            }
            let relationship = info.relationships[index]
            let destination = entityInfo(relationship.destination)
            var next: [ManagedObject] = []
            switch relationship.storage {
            case .column:
                for owner in owners { owner.fireFault() }
                let targets = Set(owners.compactMap { $0.toOne[index] })
                try preloadRows(Array(targets), destination)
                next = targets.map { object(with: $0) }
            case .inverseColumn(let column):
                let keys = owners.compactMap(\.objectID.primaryKey)
                var members: [Int64: Set<ObjectID>] = [:]
                for start in stride(from: 0, to: keys.count, by: 500) {
                    let part = Array(keys[start..<min(keys.count, start + 500)])
                    let sql = "SELECT \(destination.selectColumns), \(quoted(column)) FROM \(destination.table) WHERE \(quoted(column)) IN (\(part.map { _ in "?" }.joined(separator: ",")))"
                    let ownerColumn = destination.selectColumnList.count
                    var owned: [(Int64, ObjectID)] = []
                    let fetched = try coordinator.reading { db in
                        try materialize(db, sql, part.map { .int($0) }, destination) { member, row in
                            owned.append((row.key(ownerColumn) ?? 0, member.objectID))
                        }
                    }
                    rowQueries += 1
                    for (owner, member) in owned { members[owner, default: []].insert(member) }
                    next += fetched
                }
                // An ordered relationship's members are read in order when first used.
                for owner in owners where owner.toMany[index].committed == nil && relationship.orderColumn == nil {
                    if let pk = owner.objectID.primaryKey {
                        owner.toMany[index].committed = members[pk] ?? []
                        toManyHolders[ObjectIdentifier(owner)] = owner
                    }
                }
            case .joinTable:
                // Many-to-many: the members' IDs come one query per owner today.
                for owner in owners { next += members(of: owner, index).map { object(with: $0) } }
                try preloadRows(next.map(\.objectID), destination)
            }
            owners = next
            info = destination
        }
    }
}
