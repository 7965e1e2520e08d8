import IngestTestSupport

/// The rows `sql` returns from the store at `path`, each as its columns' values joined
/// by `|` (NULL for null, text without quotes): what the import tests compare.
func storeRows(_ path: String, _ sql: String) throws -> [String] {
    try SQLiteFile(path).rows(sql).map { row in row.map { $0 ?? "NULL" }.joined(separator: "|") }
}

/// Runs `sql` on the SQLite store at `path` (tests that damage or hand-edit a store).
func storeRowsExecute(_ path: String, _ sql: String) throws {
    try SQLiteFile(path).execute("BEGIN IMMEDIATE; " + sql + "; COMMIT")
}
