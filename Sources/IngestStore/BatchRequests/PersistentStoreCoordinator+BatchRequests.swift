import Foundation
import Synchronization

extension PersistentStoreCoordinator {
    /// Deletes the objects `request` selects, in one transaction, honouring delete rules
    /// (see `BatchDeleteRequest`); records it in the history (author `batch delete`) and
    /// posts its `SaveNotice` to the save observers, so contexts that merge automatically
    /// drop the deleted objects. Contexts holding them otherwise keep them until they merge
    /// `result.changes`.
    /// - Throws: `StoreError.unknownEntity`; `QueryPredicateError` for a predicate that does
    ///   not fit the entity; `StoreError.validation` (`.deleteDenied`) when a deny rule
    ///   refuses (nothing deleted); the store's errors.
    @discardableResult
    public func execute(_ request: BatchDeleteRequest) throws -> BatchRequestResult {
        try run(request, author: "batch delete", contextName: "batch delete", contextIdentity: nil)
    }

    /// Sets the attributes `request` gives on the objects it selects, in one statement and
    /// transaction; records it in the history (author `batch update`) and posts its
    /// `SaveNotice`, so contexts that merge automatically refresh the updated objects.
    /// - Throws: `StoreError.unknownEntity`, `.unknownProperty`; `StoreError.validation` for
    ///   a relationship, a value of the wrong type or nil for a required attribute (nothing
    ///   written); `QueryPredicateError`; the store's errors (a uniqueness constraint the new
    ///   values break: `reason == .constraint(.unique)`).
    @discardableResult
    public func execute(_ request: BatchUpdateRequest) throws -> BatchRequestResult {
        try run(request, author: "batch update", contextName: "batch update", contextIdentity: nil)
    }

    // MARK: - Running

    func run(_ request: BatchDeleteRequest, author: String, contextName: String,
             contextIdentity: ObjectIdentifier?) throws -> BatchRequestResult {
        guard let info = schema.entity(request.entityName) else { throw StoreError.unknownEntity(request.entityName) }
        let matching = try matchingQuery(request.entityName, request.predicate, request.includesSubentities, info)
        let (schema, storeID, history) = (self.schema, self.storeID, recordsHistory)
        let (keys, deleted, unlinked, sequence) = try writing { connection in
            var keys: [Int64] = []
            try connection.query(matching.sql, matching.arguments, cached: false) { row in if let key = row.key(0) { keys.append(key) } }
            var deletion = BatchDeletion(schema: schema, storeID: storeID)
            deletion.add(info.rootName, keys)
            try deletion.addCascades(connection)
            let problems = try deletion.denyProblems(connection)
            if !problems.isEmpty { throw StoreError.validation(problems) }
            let changes = try deletion.delete(connection)
            let sequence = try finishSave(connection, metadata: [:], history: history ? changes : nil, author: author)
            return (keys, deletion.deletedIDs, Set(deletion.unlinked.keys), sequence)
        }
        let notice = SaveNotice(inserted: [], updated: unlinked, deleted: deleted, sequence: sequence,
                                contextName: contextName, contextIdentity: contextIdentity)
        return finishBatch(notice, keys: keys, root: info.rootName, resultType: request.resultType)
    }

    func run(_ request: BatchUpdateRequest, author: String, contextName: String,
             contextIdentity: ObjectIdentifier?) throws -> BatchRequestResult {
        guard let info = schema.entity(request.entityName) else { throw StoreError.unknownEntity(request.entityName) }
        let assignments = try checkedAssignments(request.propertiesToUpdate, of: info)
        let matching = try matchingQuery(request.entityName, request.predicate, request.includesSubentities, info)
        // The new values are numbered after the predicate's.
        var arguments = matching.arguments
        var settings: [String] = []
        for (name, value) in assignments {
            arguments.append(value)
            settings.append("\(quoted(name)) = ?\(arguments.count)")
        }
        let entityColumn = info.code != nil
        let sql = "UPDATE \(info.table) SET \(settings.joined(separator: ", ")) WHERE \"_pk\" IN (\(matching.sql)) RETURNING \"_pk\""
            + (entityColumn ? ", \"_entity\"" : "")
        let names = Dictionary(schema.model.subentities(of: info.rootName).compactMap { name in
            schema.entity(name)?.code.map { ($0, name) }
        }) { first, _ in first }
        let history = recordsHistory
        let properties = assignments.map(\.name)
        let (keys, sequence) = try writing { connection in
            var rows: [(key: Int64, entity: String)] = []
            try connection.query(sql, arguments, cached: false) { row in
                guard let key = row.key(0) else { return }
                rows.append((key, entityColumn ? row.key(1).flatMap { names[$0] } ?? info.name : info.name))
            }
            // In row order: RETURNING gives the rows in whatever order the database updated them.
            rows.sort { $0.key < $1.key }
            var changes = HistoryChanges()
            if history { for row in rows { changes.add(row.entity, .update, row: row.key, properties: properties) } }
            let sequence = try finishSave(connection, metadata: [:], history: history ? changes : nil, author: author)
            return (rows.map(\.key), sequence)
        }
        let updated = Set(keys.map { ObjectID(storeID: storeID, entityName: info.rootName, key: .permanent($0)) })
        let notice = SaveNotice(inserted: [], updated: updated, deleted: [], sequence: sequence,
                                contextName: contextName, contextIdentity: contextIdentity)
        return finishBatch(notice, keys: keys, root: info.rootName, resultType: request.resultType)
    }

    /// The query selecting the row numbers of the objects a batch request acts on.
    private func matchingQuery(_ entity: String, _ predicate: QueryPredicate?, _ includesSubentities: Bool,
                               _ info: EntityInfo) throws -> ObjectContext.SelectQuery {
        var fetch = FetchRequest(entity, predicate: predicate)
        fetch.includesSubentities = includesSubentities
        return try ObjectContext.selectQuery(fetch, info, schema: schema, dialect: dialect, storeID: storeID,
                                             columns: "t0.\"_pk\"", window: false)
    }

    /// The values to set, checked against the model, in name order.
    /// - Throws: `StoreError.unknownProperty`, `StoreError.validation`.
    @_optimize(none)
    private func checkedAssignments(_ properties: [String: Value?], of info: EntityInfo) throws -> [(name: String, value: Value?)] {
        var problems: [ValidationProblem] = []
        var result: [(name: String, value: Value?)] = []
        let label = "the batch update of \(info.name)"
        func problem(_ name: String, _ rule: ValidationProblem.Rule, _ message: String) -> ValidationProblem {
            ValidationProblem(object: label, objectID: nil, entity: info.name, property: name, rule: rule, message: message)
        }
        for (name, given) in properties.sorted(by: { $0.key < $1.key }) {
            guard let index = info.attributeIndex[name] else {
                if info.relationshipIndex[name] != nil {
                    problems.append(problem(name, .type, "is a relationship: a batch update sets attributes only"))
                    continue
                }
                throw StoreError.unknownProperty(entity: info.name, property: name)
            }
            let type = info.attributeTypes[index]
            let value = given?.canonicalized
            if let value {
                if !type.accepts(value) {
                    problems.append(problem(name, .type, "\(PredicateArgument.value(value).kind) is not a valid \(type.rawValue)"))
                } else if case .date(let date) = value, let reason = StoredDate.problem(date) {
                    problems.append(problem(name, .dateRange, reason))
                } else if let reason = store.refusal(of: value) {
                    problems.append(problem(name, .storable, reason))
                }
            } else if info.attributeRequired[index] {
                problems.append(problem(name, .required, "is required"))
            }
            result.append((name, value))
        }
        if !problems.isEmpty { throw StoreError.validation(problems) }
        if result.isEmpty { throw StoreError.validation([problem("", .unspecified, "a batch update needs at least one attribute to set")]) }
        return result
    }

    /// After the commit: the key cache forgets rows that may be gone or changed, observers
    /// get the notice, the caller its result.
    private func finishBatch(_ notice: SaveNotice, keys: [Int64], root: String, resultType: BatchResultType) -> BatchRequestResult {
        // The batch inserters' cache holds rows by key and the fields last written to them.
        if !keys.isEmpty || !notice.deleted.isEmpty { keyCache.withLock { $0 = KeyCache(limit: $0.limit) } }
        if !notice.updated.isEmpty || !notice.deleted.isEmpty { post(notice) }
        let ids = resultType == .objectIDs ? keys.map { ObjectID(storeID: storeID, entityName: root, key: .permanent($0)) } : nil
        return BatchRequestResult(count: keys.count, objectIDs: ids, changes: notice)
    }
}
