extension ObjectContext {
    /// Every object of `entity`, including this context's unsaved inserts and without
    /// its unsaved deletes. Objects come back as faults whose rows are already read.
    /// - Throws: `StoreError` when the store cannot be read.
    public func fetch(_ entity: String) throws -> [ManagedObject] {
        try fetch(entity, filter: nil)
    }

    /// The objects of `entity` whose attribute `key` equals `value` (nil: has no value),
    /// with this context's unsaved changes taken into account.
    /// - Throws: `StoreError` when the store cannot be read.
    public func fetch(_ entity: String, where key: String, equals value: Value?) throws -> [ManagedObject] {
        let info = try knownEntity(entity)
        guard let index = info.attributeIndex[key] else { throw StoreError.unknownProperty(entity: entity, property: key) }
        return try fetch(entity, filter: (index, value))
    }

    /// How many objects `fetch(entity)` would return, counted in the store where it can be.
    /// - Throws: `StoreError` when the store cannot be read.
    public func count(_ entity: String) throws -> Int {
        checkAccess()
        let info = try knownEntity(entity)
        if parentContext != nil { return try fetch(entity).count }
        let stored = try coordinator.count(info.name)
        let inserted = insertedList.filter { info.includes($0.info) }.count
        let deleted = deletedSet.values.filter { info.includes($0.info) }.count
        return stored + inserted - deleted
    }

    private func fetch(_ entity: String, filter: (index: Int, value: Value?)?) throws -> [ManagedObject] {
        checkAccess()
        let info = try knownEntity(entity)
        var sql = "SELECT \(info.selectColumns) FROM \(info.table)"
        var conditions = info.entityCondition().map { [$0] } ?? []
        if let filter {
            let column = quoted(info.attributes[filter.index].name)
            conditions.append(filter.value == nil ? "\(column) IS NULL" : "\(column) = ?")
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY \"_pk\""
        let arguments: [Value?] = filter?.value.map { [$0] } ?? []
        let fetched: [ManagedObject]
        if parentContext != nil {
            let key = filter.map { info.attributes[$0.index].name }
            fetched = try fetchThroughParent { parent in
                if let key { try parent.fetch(entity, where: key, equals: filter!.value) } else { try parent.fetch(entity) }
            }
        } else {
            fetched = try coordinator.reading { db in try materialize(db, sql, arguments, info) }
        }
        rowQueries += 1
        var result: [ManagedObject] = []
        var seen = Set<ObjectID>()
        for object in fetched {
            let id = object.objectID
            if deletedSet[id] != nil { continue }
            if let filter, object.hasChanges, !object.isFault, object.values[filter.index] != filter.value { continue }
            result.append(object)
            seen.insert(id)
        }
        // Unsaved changes: inserted objects, and changed ones that now match.
        for object in insertedList where info.includes(object.info) {
            if filter.map({ object.values[$0.index] == $0.value }) ?? true { result.append(object) }
        }
        if let filter {
            for id in updatedSet where !seen.contains(id) {
                guard let object = registered[id], info.includes(object.info), !object.isFault,
                      object.values[filter.index] == filter.value else { continue }
                result.append(object)
            }
        }
        return result
    }

    // MARK: - Rows

    /// Runs a query whose columns are `_pk` then the entity's row, and returns one object
    /// per row: the registered one, or a new fault with the row filled in (firing it later
    /// reads nothing). Runs inside `coordinator.reading`, on the reader's thread, while
    /// this context's queue waits for it: hence no queue check here.
    func materialize(_ db: StoreConnection, _ sql: String, _ arguments: [Value?], _ info: EntityInfo,
                     eachRow: ((ManagedObject, StoreRow) -> Void)? = nil) throws -> [ManagedObject] {
        var objects: [ManagedObject] = []
        try db.query(sql, arguments) { row in
            let id = ObjectID(storeID: coordinator.storeID, entityName: info.rootName, key: .permanent(row.key(0) ?? 0))
            // A subentity's row, in a fetch of an ancestor, becomes an object of its own entity.
            let layout = info.entityColumn.flatMap { row.key($0) }.flatMap { info.subentityLayouts[$0] }
            let object: ManagedObject
            if let registeredObject = registered[id] {
                object = registeredObject
            } else {
                object = ManagedObject(id: id, info: layout.map { entityInfo($0.name) } ?? info, context: self, fault: true)
                registered[id] = object
            }
            if object.isFault && !object.preloaded {
                if let layout, object.info !== info { fill(object, row, layout) } else { fill(object, row, from: 1) }
            }
            eachRow?(object, row)
            objects.append(object)
        }
        return objects
    }

    /// Writes a subentity's columns, where a fetch of an ancestor put them, into its fault.
    private func fill(_ object: ManagedObject, _ row: StoreRow, _ layout: SubentityLayout) {
        let info = object.info
        for (index, column) in layout.attributeColumns.enumerated() {
            object.values[index] = row.value(info.attributeTypes[index], column)
        }
        for (offset, column) in info.toOneColumns.enumerated() {
            object.toOne[column.relationship] = row.key(layout.toOneColumns[offset]).map {
                ObjectID(storeID: coordinator.storeID, entityName: info.relationships[column.relationship].destinationRoot, key: .permanent($0))
            }
        }
        object.preloaded = true
    }

    /// Writes a row's columns into a fault's values and to-one keys.
    private func fill(_ object: ManagedObject, _ row: StoreRow, from first: Int) {
        let info = object.info
        for index in 0..<info.attributeTypes.count {
            object.values[index] = row.value(info.attributeTypes[index], first + index)
        }
        let base = first + info.attributes.count
        for (offset, column) in info.toOneColumns.enumerated() {
            object.toOne[column.relationship] = row.key(base + offset).map {
                ObjectID(storeID: coordinator.storeID, entityName: info.relationships[column.relationship].destinationRoot, key: .permanent($0))
            }
        }
        object.preloaded = true
    }

    func readRow(_ row: StoreRow, _ info: EntityInfo, from first: Int) -> RowData {
        var values: [Value?] = []
        values.reserveCapacity(info.attributes.count)
        for (offset, attribute) in info.attributes.enumerated() {
            values.append(row.value(attribute.type, first + offset))
        }
        var toOne = [ObjectID?](repeating: nil, count: info.relationships.count)
        let base = first + info.attributes.count
        for (offset, column) in info.toOneColumns.enumerated() {
            if let key = row.key(base + offset) {
                toOne[column.relationship] = ObjectID(storeID: coordinator.storeID,
                                                      entityName: info.relationships[column.relationship].destinationRoot,
                                                      key: .permanent(key))
            }
        }
        return RowData(values: values, toOne: toOne)
    }

    /// The stored row of `id`, or nil when there is none. Traps on a read failure, as
    /// a fault that cannot be fulfilled does.
    func loadRow(_ id: ObjectID, _ info: EntityInfo) -> RowData? {
        do {
            return try loadRowOrThrow(id, info)
        } catch {
            fatalError("cannot load \(id): \(error)")
        }
    }

    func loadRowOrThrow(_ id: ObjectID, _ info: EntityInfo) throws -> RowData? {
        if parentContext != nil {
            rowQueries += 1
            return try rowThroughParent(id)
        }
        guard let pk = id.primaryKey else { return nil }
        rowQueries += 1
        return try coordinator.reading { db in
            var data: RowData?
            try db.query(info.selectByKeySQL, [.int(pk)]) { row in
                if data == nil { data = readRow(row, info, from: 1) }
            }
            return data
        }
    }

    /// The members of a to-many relationship: as stored (loaded once), plus this context's changes.
    func members(of object: ManagedObject, _ index: Int) -> Set<ObjectID> {
        if object.toMany[index].committed == nil { load(object, index) }
        let state = object.toMany[index]
        return state.committed!.union(state.added).subtracting(state.removed)
    }

    /// The members of an ordered to-many, in order.
    func orderedMembers(of object: ManagedObject, _ index: Int) -> [ObjectID] {
        if object.toMany[index].committed == nil { load(object, index) }
        return object.toMany[index].order ?? Array(members(of: object, index))
    }

    /// Reads the stored members (in order, for an ordered relationship); changes made
    /// before (to an ordered one, `changeToMany` loads first) are kept on top.
    func load(_ object: ManagedObject, _ index: Int) {
        // A child's object that the parent holds (a new one it was handed included) has the parent's members.
        let stored = parentContext != nil && !object.isInserted ? membersThroughParent(of: object, index)
            : object.objectID.isTemporary ? [] : storedMembers(of: object, index)
        object.toMany[index].committed = Set(stored)
        if object.info.relationships[index].orderColumn != nil {
            let state = object.toMany[index]
            let current = Set(stored).union(state.added).subtracting(state.removed)
            // A local order not saved yet (read again after a merge) stays; members that
            // came meanwhile follow it, in their stored order.
            var order = state.orderChanged ? (state.order ?? []).filter(current.contains) : []
            var placed = Set(order)
            for id in stored + state.added.sorted(by: { $0.uri < $1.uri }) where current.contains(id) && placed.insert(id).inserted {
                order.append(id)
            }
            object.toMany[index].order = order
        }
        toManyHolders[ObjectIdentifier(object)] = object
    }

    /// The stored members, in order for an ordered relationship (members without a position,
    /// written by an import's batch path, come last, in the order they were stored).
    private func storedMembers(of object: ManagedObject, _ index: Int) -> [ObjectID] {
        guard let pk = object.objectID.primaryKey else { return [] }
        let relationship = object.info.relationships[index]
        let destination = entityInfo(relationship.destination)
        let sql: String
        var materialized = false
        switch relationship.storage {
        case .inverseColumn(let column):
            let order = relationship.orderColumn.map { " ORDER BY t0.\(quoted($0)) IS NULL, t0.\(quoted($0)), t0.\"_pk\"" } ?? ""
            // Members that may be of subentities: their rows come along (with `_entity`), so
            // each becomes an object of its own entity now, with nothing left to read.
            materialized = destination.entityColumn != nil
            sql = materialized
                ? "SELECT \(destination.aliasedSelectColumns) FROM \(destination.table) t0 WHERE t0.\(quoted(column)) = ?\(order)"
                : "SELECT t0.\"_pk\" FROM \(destination.table) t0 WHERE t0.\(quoted(column)) = ?\(order)"
        case .joinTable(let table, let source, let other):
            let order = relationship.orderColumn.map { " ORDER BY j.\(quoted($0)) IS NULL, j.\(quoted($0)), j.\(quoted(other))" } ?? ""
            materialized = destination.entityColumn != nil
            sql = materialized
                ? "SELECT \(destination.aliasedSelectColumns) FROM \(quoted(table)) j JOIN \(destination.table) t0 ON t0.\"_pk\" = j.\(quoted(other)) WHERE j.\(quoted(source)) = ?\(order)"
                : "SELECT j.\(quoted(other)) FROM \(quoted(table)) j WHERE j.\(quoted(source)) = ?\(order)"
        case .column: fatalError("a to-one relationship has no members")
        }
        do {
            rowQueries += 1
            if materialized {
                let members = try coordinator.reading { db in try materialize(db, sql, [.int(pk)], destination) }
                return members.map(\.objectID)
            }
            let keys = try coordinator.reading { db in try db.int64s(sql, [.int(pk)]) }
            return keys.map { ObjectID(storeID: coordinator.storeID, entityName: relationship.destinationRoot, key: .permanent($0)) }
        } catch {
            fatalError("cannot load \(object.objectID).\(relationship.relationship.name): \(error)")
        }
    }

    func noteJoinChange(_ object: ManagedObject, _ index: Int, _ member: ManagedObject, inserted: Bool) {
        guard case .joinTable(let table, let source, _) = object.info.relationships[index].storage else { return }
        let change = source == "_a"
            ? JoinChange(table: table, a: object.objectID, b: member.objectID)
            : JoinChange(table: table, a: member.objectID, b: object.objectID)
        let before = joinChanges[change]
        if joinChanges[change] == !inserted {
            joinChanges[change] = nil
        } else {
            joinChanges[change] = inserted
        }
        undoRecorder?.record(.join(change, before: before, after: joinChanges[change]))
        noteUpdated(object)
        noteUpdated(member)
    }
}
