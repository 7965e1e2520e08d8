import GRDB

/// The rows `sql` returns from the store at `path`, each as its columns' values joined
/// by `|` (NULL for null, text without quotes): what the import tests compare.
func storeRows(_ path: String, _ sql: String) throws -> [String] {
    try DatabaseQueue(path: path).read { db in
        try Row.fetchAll(db, sql: sql).map { row in
            row.columnNames.map { name in
                let value: DatabaseValue = row[name]
                return value.isNull ? "NULL" : String.fromDatabaseValue(value) ?? value.description
            }.joined(separator: "|")
        }
    }
}

/// Runs `sql` on the SQLite store at `path` (tests that damage or hand-edit a store).
func storeRowsExecute(_ path: String, _ sql: String) throws {
    try DatabaseQueue(path: path).write { db in try db.execute(sql: sql) }
}
