import GRDB
import GRDBSQLite

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
        let info = entityInfo(fetch.request.entityName)
        var compiler = PredicateCompiler(schema: coordinator.schema)
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
                let sql = switch function {
                case .count: "count(\(argument))"
                case .sum: type == .double ? "total(\(argument))" : "coalesce(sum(\(argument)), 0)"
                case .avg: "avg(\(argument))"
                case .min: "min(\(argument))"
                case .max: "max(\(argument))"
                }
                compiler.expressionAliases[name] = sql
                columns.append((name, sql, type, function))
            }
        }
        let groups = try fetch.groupBy.map { try compiler.sortColumn($0.split(separator: ".").map(String.init), entity: info) }
        let condition = try fetch.request.predicate.map { try compiler.condition($0, entity: info) }
        let having = try fetch.having.map { try compiler.condition($0, entity: info) }
        var order: [String] = []
        for descriptor in fetch.request.sortDescriptors {
            order.append(descriptor.sqlTerm(try compiler.sortColumn(descriptor.path, entity: info)))
        }
        var sql = "SELECT \(columns.map(\.sql).joined(separator: ", ")) FROM \(info.table) t0 \(compiler.joins.joined(separator: " "))"
        if let condition { sql += " WHERE \(condition)" }
        if !groups.isEmpty { sql += " GROUP BY " + groups.joined(separator: ", ") }
        if let having { sql += " HAVING \(having)" }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        if fetch.request.fetchLimit != nil || fetch.request.fetchOffset > 0 {
            let limit = compiler.bind(.int(Int64(fetch.request.fetchLimit ?? -1)))
            let offset = compiler.bind(.int(Int64(fetch.request.fetchOffset)))
            sql += " LIMIT \(limit) OFFSET \(offset)"
        }
        let arguments = compiler.arguments
        let finalSQL = sql
        return try coordinator.read { db in
            // Prepared with the C API: GRDB's statement authorizer crashes on some
            // aggregate queries (a NULL column name in DatabaseRegion), and these
            // statements vary too much to be worth its cache.
            var prepared: SQLiteStatement?
            guard sqlite3_prepare_v2(db.sqliteConnection, finalSQL, -1, &prepared, nil) == SQLITE_OK, let statement = prepared else {
                throw StoreError.database(String(cString: sqlite3_errmsg(db.sqliteConnection)), code: sqlite3_extended_errcode(db.sqliteConnection))
            }
            defer { sqlite3_finalize(statement) }
            for (index, value) in arguments.enumerated() { SQLiteValues.bind(value, to: statement, at: Int32(index + 1)) }
            var rows: [[String: Value?]] = []
            while true {
                let code = sqlite3_step(statement)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw StoreError.database(String(cString: sqlite3_errmsg(db.sqliteConnection)), code: sqlite3_extended_errcode(db.sqliteConnection)) }
                var row: [String: Value?] = [:]
                for (index, column) in columns.enumerated() {
                    row[column.name] = Self.readResult(statement, Int32(index), type: column.type, function: column.function)
                }
                rows.append(row)
            }
            return rows
        }
    }

    /// A result column as a `Value`: typed by its attribute where it has one; counts are
    /// integers, averages doubles.
    private static func readResult(_ statement: SQLiteStatement, _ column: Int32, type: AttributeType?,
                                   function: AggregateFunction?) -> Value? {
        if sqlite3_column_type(statement, column) == SQLITE_NULL { return nil }
        switch function {
        case .count?: return .int(sqlite3_column_int64(statement, column))
        case .avg?: return .double(sqlite3_column_double(statement, column))
        default: break
        }
        if let type { return SQLiteValues.read(type, from: statement, at: column) }
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, column))
        default: return SQLiteValues.read(.string, from: statement, at: column)
        }
    }

    /// The IDs of the objects the request describes, without making the objects.
    /// - Throws: as `fetch(_:)`.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        checkAccess()
        let info = entityInfo(request.entityName)
        if request.includesPendingChanges && hasPendingChanges(for: info) {
            return try fetch(request).map(\.objectID)
        }
        let query = try selectQuery(request, info, columns: "t0.\"_pk\"", window: true)
        return try coordinator.read { db in
            let statement = try db.cachedStatement(sql: query.sql).sqliteStatement
            defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
            for (index, value) in query.arguments.enumerated() { SQLiteValues.bind(value, to: statement, at: Int32(index + 1)) }
            var ids: [ObjectID] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                ids.append(ObjectID(storeID: coordinator.storeID, entityName: info.name, key: .permanent(sqlite3_column_int64(statement, 0))))
            }
            return ids
        }
    }
}
