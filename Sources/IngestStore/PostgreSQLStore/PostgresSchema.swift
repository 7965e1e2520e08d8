extension AttributeType {
    /// The column type in a PostgreSQL table.
    var postgresType: String {
        switch self {
        // Byte order, as SQLite compares text, whatever the database's locale.
        case .string, .uuid: "text COLLATE \"C\""
        // Exact, ordered by number; canonical text in (`DecimalText`) prints as it came.
        case .decimal: "numeric"
        case .int16: "smallint"
        case .int32: "integer"
        case .int64: "bigint"
        case .double: "double precision"
        case .bool: "boolean"
        case .date: "timestamp with time zone"
        case .binary: "bytea"
        }
    }

    /// The type of a batch cell of this attribute in a staging table (what COPY sends):
    /// integers and bools as `int`, doubles and dates (seconds since 2001) as `double` cells.
    var stagingType: String {
        switch self {
        case .string, .uuid: "text"
        case .decimal: "numeric"
        case .int16, .int32, .int64, .bool: "bigint"
        case .double, .date: "double precision"
        case .binary: "bytea"
        }
    }

    /// `expression`, of `stagingType`, as a value of the column's type.
    func fromStaging(_ expression: String) -> String {
        switch self {
        case .bool: "(\(expression) <> 0)"
        case .date: "to_timestamp(\(expression) + 978307200)"
        case .int16: "(\(expression))::smallint"
        case .int32: "(\(expression))::integer"
        default: expression
        }
    }
}

extension EntityInfo {
    /// Every identifier the tables use (PostgreSQL cuts names past 63 bytes, which could
    /// make two of them one).
    var postgresIdentifiers: [String] {
        var names = [name, "_unique_\(name)_0"] + attributeNames + toOneColumns.map(\.column)
        names += secondaryIndexes.map(\.name)
        for info in relationships { if case .joinTable(let table, _, _) = info.storage { names += [table, table + "_b"] } }
        return names
    }
}
