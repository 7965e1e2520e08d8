import Synchronization
import Foundation

/// What to fetch: objects of one entity, filtered by a predicate, in an order, a window of them.
public struct FetchRequest: Sendable, Hashable {
    public var entityName: String
    public var predicate: QueryPredicate?
    public var sortDescriptors: [FetchSortDescriptor]
    public var fetchLimit: Int?
    public var fetchOffset: Int
    /// Whether the context's unsaved inserts, changes and deletes count (Core Data's default: yes).
    public var includesPendingChanges: Bool
    /// Whether objects of the entity's subentities come back too (Core Data's default: yes).
    public var includesSubentities = true
    /// Rows read per batch by `ObjectContext.fetchResults(_:)`; 0 reads them all at once.
    public var fetchBatchSize: Int = 0
    /// Relationship key paths (`whoTook`, `photos.tags`) whose objects `fetch(_:)` reads
    /// along with the results: one query per relationship, not one per object.
    public var relationshipKeyPathsForPrefetching: [String] = []

    public init(_ entityName: String, predicate: QueryPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = [],
                fetchLimit: Int? = nil, fetchOffset: Int = 0, includesPendingChanges: Bool = true) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
    }
}

extension ObjectContext {
    /// The objects the request describes, as faults whose rows are already read.
    /// - Throws: `QueryPredicateError` for a predicate or sort key that does not fit the
    ///   entity; `StoreError` when the store cannot be read.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        checkAccess()
        let info = try knownEntity(request.entityName)
        let pending = request.includesPendingChanges && hasPendingChanges(for: info)
        // With unsaved changes in play the window is cut in memory, after they are merged in.
        var result: [ManagedObject]
        if parentContext != nil {
            // A child's fetch is its parent's (unsaved changes there included); related
            // objects come from the parent as their faults fire, not prefetched.
            var asked = request
            asked.relationshipKeyPathsForPrefetching = []
            if pending { (asked.fetchLimit, asked.fetchOffset) = (nil, 0) }
            result = try fetchThroughParent { parent in try parent.fetch(asked) }
        } else {
            let query = try selectQuery(request, info, columns: info.aliasedSelectColumns, window: !pending)
            result = try coordinator.reading { db in try materialize(db, query.sql, query.arguments, info) }
        }
        rowQueries += 1
        if pending { result = try applyPendingChanges(to: result, request, info) }
        for keyPath in request.relationshipKeyPathsForPrefetching where parentContext == nil {
            try prefetch(keyPath.split(separator: ".").map(String.init), for: result, of: info)
        }
        return result
    }

    /// How many objects `fetch(request)` would return, counted by SQLite where no
    /// unsaved change is involved.
    /// - Throws: as `fetch(_:)`.
    public func count(for request: FetchRequest) throws -> Int {
        checkAccess()
        let info = try knownEntity(request.entityName)
        if parentContext != nil || request.includesPendingChanges && hasPendingChanges(for: info) { return try fetch(request).count }
        let query = try selectQuery(request, info, columns: "count(*)", window: false, countOnly: true)
        var count = try coordinator.reading { db in Int(try db.int64(query.sql, query.arguments) ?? 0) }
        count = max(0, count - request.fetchOffset)
        if let limit = request.fetchLimit { count = min(count, limit) }
        return count
    }

    func hasPendingChanges(for info: EntityInfo) -> Bool {
        insertedList.contains { info.includes($0.info) } || deletedSet.values.contains { info.includes($0.info) }
            || updatedSet.contains { $0.entityName == info.rootName }
    }

    struct SelectQuery: Sendable {
        var sql: String
        var arguments: [Value?]
    }

    struct QueryCacheKey: Hashable, Sendable {
        var request: FetchRequest
        var columns: String
        var window: Bool
        var countOnly: Bool
    }

    /// The query for a request, compiled once per distinct request and shape and then
    /// taken from the coordinator's cache (compiling a predicate costs more than running
    /// an indexed count).
    func selectQuery(_ request: FetchRequest, _ info: EntityInfo, columns: String, window: Bool,
                     countOnly: Bool = false) throws -> SelectQuery {
        let key = QueryCacheKey(request: request, columns: columns, window: window, countOnly: countOnly)
        if let cached = coordinator.queryCache.withLock({ $0[key] }) { return cached }
        let query = try Self.selectQuery(request, info, schema: coordinator.schema, dialect: coordinator.dialect,
                                         storeID: coordinator.storeID,
                                         columns: columns, window: window, countOnly: countOnly)
        // A request with a long list (an importer's IN lookup) is rarely asked twice: not worth the memory.
        if query.arguments.count <= 64 {
            coordinator.queryCache.withLock { cache in
                if cache.count > 256 { cache.removeAll() }
                cache[key] = query
            }
        }
        return query
    }

    static func selectQuery(_ request: FetchRequest, _ info: EntityInfo, schema: Schema, dialect: SQLDialect,
                            storeID: UUID, columns: String, window: Bool, countOnly: Bool = false) throws -> SelectQuery {
        var compiler = PredicateCompiler(schema: schema, dialect: dialect, storeID: storeID)
        let condition = try request.predicate.map { try compiler.condition($0, entity: info) }
        var order: [String] = []
        if !countOnly {
            for descriptor in request.sortDescriptors {
                order.append(try compiler.sortTerm(descriptor, entity: info))
            }
            order.append("t0.\"_pk\"")
        }
        var sql = "SELECT \(countOnly ? "count(*)" : columns) FROM \(info.table) t0 \(compiler.joins.joined(separator: " "))"
        let entityCondition = info.entityCondition(alias: "t0", includingSubentities: request.includesSubentities)
        if let condition = [entityCondition, condition.map { "(\($0))" }].compactMap({ $0 }).joined(separator: " AND ").nilIfEmpty {
            sql += " WHERE \(condition)"
        }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        if window && (request.fetchLimit != nil || request.fetchOffset > 0) {
            let limit = compiler.bindLimit(request.fetchLimit)
            let offset = compiler.bind(.int(Int64(request.fetchOffset)))
            sql += " LIMIT \(limit) OFFSET \(offset)"
        }
        let arguments = compiler.arguments
        if countOnly && condition == nil && entityCondition == nil { sql = "SELECT count(*) FROM \(info.table) t0" }
        return SelectQuery(sql: sql, arguments: arguments)
    }

    /// Merges the context's unsaved changes into stored results, then sorts and cuts the window.
    private func applyPendingChanges(to stored: [ManagedObject], _ request: FetchRequest, _ info: EntityInfo) throws -> [ManagedObject] {
        var seen = Set<ObjectIdentifier>()
        var result: [ManagedObject] = []
        func matches(_ object: ManagedObject) throws -> Bool {
            try request.predicate.map { try $0.evaluate(with: object) } ?? true
        }
        for object in stored where !object.isDeleted {
            if object.hasChanges, try !matches(object) { continue }
            result.append(object)
            seen.insert(ObjectIdentifier(object))
        }
        func belongs(_ object: ManagedObject) -> Bool {
            request.includesSubentities ? info.includes(object.info) : object.info === info
        }
        for object in insertedList where belongs(object) && !seen.contains(ObjectIdentifier(object)) {
            if try matches(object) { result.append(object); seen.insert(ObjectIdentifier(object)) }
        }
        for id in updatedSet {
            guard let object = registered[id], belongs(object), !object.isDeleted,
                  !seen.contains(ObjectIdentifier(object)) else { continue }
            if try matches(object) { result.append(object) }
        }
        if !request.sortDescriptors.isEmpty {
            result.sort { FetchSortDescriptor.ordered($0, before: $1, by: request.sortDescriptors) }
        }
        let start = min(request.fetchOffset, result.count)
        let end = request.fetchLimit.map { min(result.count, start + $0) } ?? result.count
        return Array(result[start..<end])
    }
}

extension PersistentStoreCoordinator {
    /// The SQL a fetch (or, with `countOnly`, a count) of `request` runs against the
    /// store, with its numbered parameters' values: to explain a query, or run it elsewhere.
    /// - Throws: `QueryPredicateError` for a predicate or sort key that does not fit the entity.
    public func sql(for request: FetchRequest, countOnly: Bool = false) throws -> (sql: String, arguments: [Value?]) {
        guard let info = schema.entity(request.entityName) else { throw StoreError.unknownEntity(request.entityName) }
        let query = try ObjectContext.selectQuery(request, info, schema: schema, dialect: dialect, storeID: storeID,
                                                  columns: info.aliasedSelectColumns,
                                                  window: !countOnly, countOnly: countOnly)
        return (query.sql, query.arguments)
    }
}

extension String {
    /// nil for the empty string.
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
