/// A column of a dictionary fetch: an attribute (possibly through to-one relationships)
/// or a named aggregate over the fetched rows.
public enum FetchProperty: Sendable, Hashable {
    case keyPath(String)
    case aggregate(name: String, function: AggregateFunction, keyPath: String?)

    /// The key of this property in each result dictionary.
    public var name: String {
        switch self {
        case .keyPath(let path): path
        case .aggregate(let name, _, _): name
        }
    }
}

/// A dictionary fetch: chosen properties, optionally grouped, as in Core Data's
/// `.dictionaryResultType` with `propertiesToFetch`, `propertiesToGroupBy` and `havingPredicate`.
public struct DictionaryFetch: Sendable, Hashable {
    public var request: FetchRequest
    public var properties: [FetchProperty]
    public var groupBy: [String]
    /// Filters groups; it may name aggregates by their names: `total > 100`.
    public var having: QueryPredicate?

    public init(_ request: FetchRequest, properties: [FetchProperty], groupBy: [String] = [], having: QueryPredicate? = nil) {
        self.request = request
        self.properties = properties
        self.groupBy = groupBy
        self.having = having
    }
}

extension ObjectContext {
    /// The properties of the matching rows, one dictionary per row (or per group), read
    /// straight from the store: objects are not made, and unsaved changes do not count.
    /// - Throws: `QueryPredicateError` for keys the entity does not have; `StoreError`.
    public func fetchDictionaries(_ fetch: DictionaryFetch) throws -> [[String: Value?]] {
        checkAccess()
        let info = try knownEntity(fetch.request.entityName)
        let dialect = coordinator.dialect
        var compiler = PredicateCompiler(schema: coordinator.schema, dialect: dialect, storeID: coordinator.storeID)
        var columns: [(name: String, sql: String, type: AttributeType?, function: AggregateFunction?)] = []
        for property in fetch.properties {
            switch property {
            case .keyPath(let path):
                let (sql, type) = try compiler.columnWithType(path.split(separator: ".").map(String.init), entity: info)
                columns.append((path, sql, type, nil))
            case .aggregate(let name, let function, let path):
                var type: AttributeType?
                var argument = "*"
                if let path {
                    let column = try compiler.columnWithType(path.split(separator: ".").map(String.init), entity: info)
                    argument = column.sql
                    type = column.type
                } else if function != .count {
                    throw QueryPredicateError("@\(function.rawValue) needs a key path", column: 0)
                }
                let sql = compiler.aggregate(function, argument, type: type)
                compiler.expressionAliases[name] = sql
                columns.append((name, sql, type, function))
            }
        }
        let groups = try fetch.groupBy.map { try compiler.sortColumn($0.split(separator: ".").map(String.init), entity: info) }
        let condition = try fetch.request.predicate.map { try compiler.condition($0, entity: info) }
        let having = try fetch.having.map { try compiler.condition($0, entity: info) }
        var order: [String] = []
        for descriptor in fetch.request.sortDescriptors {
            order.append(try compiler.sortTerm(descriptor, entity: info))
        }
        var sql = "SELECT \(columns.map(\.sql).joined(separator: ", ")) FROM \(info.table) t0 \(compiler.joins.joined(separator: " "))"
        let entityCondition = info.entityCondition(alias: "t0", includingSubentities: fetch.request.includesSubentities)
        if let condition = [entityCondition, condition.map { "(\($0))" }].compactMap({ $0 }).joined(separator: " AND ").nilIfEmpty {
            sql += " WHERE \(condition)"
        }
        if !groups.isEmpty { sql += " GROUP BY " + groups.joined(separator: ", ") }
        if let having { sql += " HAVING \(having)" }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        if fetch.request.fetchLimit != nil || fetch.request.fetchOffset > 0 {
            let limit = compiler.bindLimit(fetch.request.fetchLimit)
            let offset = compiler.bind(.int(Int64(fetch.request.fetchOffset)))
            sql += " LIMIT \(limit) OFFSET \(offset)"
        }
        let arguments = compiler.arguments
        let finalSQL = sql
        return try coordinator.reading { db in
            var rows: [[String: Value?]] = []
            try db.query(finalSQL, arguments, cached: false) { row in
                var result: [String: Value?] = [:]
                for (index, column) in columns.enumerated() {
                    result[column.name] = Self.readResult(row, index, type: column.type, function: column.function)
                }
                rows.append(result)
            }
            return rows
        }
    }

    /// A result column as a `Value`: typed by its attribute where it has one; counts are
    /// integers, averages doubles.
    private static func readResult(_ row: StoreRow, _ column: Int, type: AttributeType?, function: AggregateFunction?) -> Value? {
        if row.isNull(column) { return nil }
        switch function {
        case .count?: return row.key(column).map(Value.int)
        case .avg?: return row.double(column).map(Value.double)
        default: break
        }
        if let type { return row.value(type, column) }
        return row.untypedValue(column)
    }

    /// The IDs of the objects the request describes, without making the objects.
    /// - Throws: as `fetch(_:)`.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        checkAccess()
        let info = try knownEntity(request.entityName)
        // A child's are its parent's, unsaved changes there included.
        if parentContext != nil || request.includesPendingChanges && hasPendingChanges(for: info) {
            return try fetch(request).map(\.objectID)
        }
        let query = try selectQuery(request, info, columns: "t0.\"_pk\"", window: true)
        return try coordinator.reading { db in
            try db.int64s(query.sql, query.arguments).map {
                ObjectID(storeID: coordinator.storeID, entityName: info.rootName, key: .permanent($0))
            }
        }
    }
}
