import Foundation
import CSQLite

/// A prepared statement of the sqlite3 C API.
typealias SQLiteStatement = OpaquePointer

/// One SQLite connection with its cache of prepared statements: what the store's SQL runs
/// on. Not Sendable: a connection is used by one thread at a time, lent by
/// `SQLiteConnectionPool` inside its lock.
///
/// Ingest's own layer over the C API rather than GRDB's: the store's hot paths already bound
/// and stepped statements themselves, and GRDB compiled alone for 100 s on the release
/// build's critical path (Performance.md, "The build").
final class SQLiteDatabase {
    /// The sqlite3 handle, for the C API.
    let sqliteConnection: OpaquePointer
    let isReadOnly: Bool
    private var statements: [String: SQLiteStatement] = [:]
    /// Inside `inTransaction`'s body: a transaction SQLite ended on its own meanwhile (a
    /// trigger's `RAISE(ROLLBACK)`, some I/O errors) stops every later statement, as GRDB's
    /// transaction blocks did, instead of letting them autocommit one by one.
    private var isInTransactionBlock = false

    /// Opens `path` (`:memory:` for a database in memory) as GRDB opened it: extended result
    /// codes, foreign keys enforced, double-quoted text never taken for a string literal, and
    /// a first read that fails at once on a file that is not a database. With `creating`
    /// false, a writable connection refuses a file that is not there instead of making one.
    /// - Throws: `SQLiteError`.
    init(path: String, readOnly: Bool, busyTimeout: Double?, creating: Bool = true) throws {
        var handle: OpaquePointer?
        let writable = SQLITE_OPEN_READWRITE | (creating ? SQLITE_OPEN_CREATE : 0)
        let flags = (readOnly ? SQLITE_OPEN_READONLY : writable) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = handle.map { SQLiteError(on: $0) }
                ?? SQLiteError(SQLiteResultCode(rawValue: code), message: String(cString: sqlite3_errstr(code)))
            sqlite3_close_v2(handle)
            throw error
        }
        sqliteConnection = handle
        isReadOnly = readOnly
        sqlite3_extended_result_codes(handle, 1)
        ingest_sqlite3_disable_double_quoted_literals(handle)
        if let busyTimeout { sqlite3_busy_timeout(handle, Int32(busyTimeout * 1000)) }
        try execute(sql: "PRAGMA foreign_keys = ON")
        try forEachRow(sql: "SELECT * FROM sqlite_master LIMIT 1") { _ in false }
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(sqliteConnection)
    }

    /// Whether a transaction is open on the connection.
    var isInsideTransaction: Bool { sqlite3_get_autocommit(sqliteConnection) == 0 }

    /// `sql` prepared once per connection and kept: reset, its bindings as the last use left
    /// them (every use binds all of its parameters).
    /// - Throws: `SQLiteError` when `sql` does not compile.
    func cachedStatement(sql: String) throws -> SQLiteStatement {
        try checkTransactionIsAlive()
        if let statement = statements[sql] {
            sqlite3_reset(statement)
            return statement
        }
        let statement = try prepare(sql)
        statements[sql] = statement
        return statement
    }

    /// `sql`, one statement, prepared for one use: the caller finalizes it.
    /// - Throws: `SQLiteError`.
    func prepare(_ sql: String) throws -> SQLiteStatement {
        try checkTransactionIsAlive()
        var statement: SQLiteStatement?
        guard sqlite3_prepare_v2(sqliteConnection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SQLiteError(on: sqliteConnection, sql: sql)
        }
        return statement
    }

    /// Runs every statement of `sql` (one or several, separated by semicolons), binding
    /// `arguments` to their parameters in order.
    /// - Throws: `SQLiteError`; the statements before the failing one have run.
    func execute(sql: String, arguments: [any SQLiteArgument] = []) throws {
        try checkTransactionIsAlive()
        var remaining = arguments[...]
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var statement: SQLiteStatement?
                guard sqlite3_prepare_v2(sqliteConnection, current, -1, &statement, &next) == SQLITE_OK else {
                    throw SQLiteError(on: sqliteConnection, sql: sql)
                }
                // Whitespace or a comment after the last semicolon compiles to no statement.
                guard let statement else { continue }
                defer { sqlite3_finalize(statement) }
                let count = Int(sqlite3_bind_parameter_count(statement))
                for (offset, argument) in remaining.prefix(count).enumerated() {
                    argument.bind(to: statement, at: Int32(offset + 1))
                }
                guard remaining.count >= count else { throw Self.argumentCountMismatch(sql, arguments.count) }
                remaining = remaining.dropFirst(count)
                var code = sqlite3_step(statement)
                while code == SQLITE_ROW { code = sqlite3_step(statement) }
                guard code == SQLITE_DONE else { throw SQLiteError(on: sqliteConnection, sql: sql) }
            }
        }
        guard remaining.isEmpty else { throw Self.argumentCountMismatch(sql, arguments.count) }
    }

    private static func argumentCountMismatch(_ sql: String, _ count: Int) -> SQLiteError {
        SQLiteError(.SQLITE_MISUSE, message: "\(count) argument(s) do not match the statement's parameters", sql: sql)
    }

    /// - Throws: `SQLiteError` (`SQLITE_ABORT`) when SQLite ended the transaction of the
    ///   `inTransaction` block this runs in.
    private func checkTransactionIsAlive() throws {
        if isInTransactionBlock && !isInsideTransaction {
            throw SQLiteError(.SQLITE_ABORT, message: "the transaction was ended by SQLite (a failure rolled it back); nothing after it was written")
        }
    }

    /// Runs the one statement `sql` and calls `row` on each result row while it returns
    /// true. Prepared for this call only, as GRDB's fetches were: a query run from inside
    /// another's rows never shares its statement.
    /// - Throws: `SQLiteError`; what `row` throws.
    func forEachRow(sql: String, arguments: [any SQLiteArgument] = [], _ row: (SQLiteStatement) throws -> Bool) throws {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard Int(sqlite3_bind_parameter_count(statement)) == arguments.count else { throw Self.argumentCountMismatch(sql, arguments.count) }
        for (index, argument) in arguments.enumerated() { argument.bind(to: statement, at: Int32(index + 1)) }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw SQLiteError(on: sqliteConnection, sql: sql) }
            guard try row(statement) else { return }
        }
    }

    /// Whether the database has a table named `name` (as SQLite compares names: any case).
    /// - Throws: `SQLiteError`.
    func tableExists(_ name: String) throws -> Bool {
        try Bool.fetchOne(self, sql: "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                          arguments: [name]) ?? false
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` takes the write lock at once; a
    /// deferred one at the first write), committed when it returns and rolled back when it
    /// throws.
    /// - Throws: `SQLiteError`; what `body` throws.
    func inTransaction<T>(immediate: Bool, _ body: () throws -> T) throws -> T {
        try execute(sql: immediate ? "BEGIN IMMEDIATE TRANSACTION" : "BEGIN DEFERRED TRANSACTION")
        isInTransactionBlock = true
        defer { isInTransactionBlock = false }
        let value: T
        do {
            value = try body()
            try execute(sql: "COMMIT TRANSACTION")
        } catch {
            rollback()
            throw error
        }
        return value
    }

    /// Runs `body` behind a savepoint inside the open transaction: what it wrote is undone
    /// when it throws, and the transaction goes on.
    /// - Throws: `SQLiteError`; what `body` throws.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        try execute(sql: "SAVEPOINT ingest")
        let value: T
        do {
            value = try body()
        } catch {
            // A failure SQLite ended the transaction for (a full disk, say) leaves no savepoint.
            if isInsideTransaction { try? execute(sql: "ROLLBACK TO SAVEPOINT ingest; RELEASE SAVEPOINT ingest") }
            throw error
        }
        try execute(sql: "RELEASE SAVEPOINT ingest")
        return value
    }

    /// Ends the open transaction, if SQLite has not already. A rollback that fails leaves
    /// it open: `isStuckInTransaction` says so, and the pool then closes the connection
    /// rather than lend it again.
    private func rollback() {
        if isInsideTransaction { sqlite3_exec(sqliteConnection, "ROLLBACK TRANSACTION", nil, nil, nil) }
    }

    /// A transaction is open outside any `inTransaction` block: a rollback failed.
    var isStuckInTransaction: Bool { !isInTransactionBlock && isInsideTransaction }

    /// Registers a collation of two texts (made Strings) under `name`.
    /// - Throws: `SQLiteError` when SQLite refuses it.
    func addCollation(_ name: String, _ compare: @escaping (String, String) -> ComparisonResult) throws {
        final class Box { let compare: (String, String) -> ComparisonResult; init(_ compare: @escaping (String, String) -> ComparisonResult) { self.compare = compare } }
        let box = Unmanaged.passRetained(Box(compare))
        let code = sqlite3_create_collation_v2(sqliteConnection, name, SQLITE_UTF8, box.toOpaque(), { box, count1, bytes1, count2, bytes2 in
            let compare = Unmanaged<Box>.fromOpaque(box!).takeUnretainedValue().compare
            let a = String(decoding: UnsafeRawBufferPointer(start: bytes1, count: Int(count1)), as: UTF8.self)
            let b = String(decoding: UnsafeRawBufferPointer(start: bytes2, count: Int(count2)), as: UTF8.self)
            return Int32(compare(a, b).rawValue)
        }, { box in Unmanaged<Box>.fromOpaque(box!).release() })
        // On failure SQLite never calls the destructor.
        guard code == SQLITE_OK else {
            box.release()
            throw SQLiteError(on: sqliteConnection)
        }
    }

    /// Copies the whole database into `target` with SQLite's online backup: consistent even
    /// while another connection writes this one.
    /// - Throws: `SQLiteError`.
    func backup(to target: SQLiteDatabase) throws {
        guard let backup = sqlite3_backup_init(target.sqliteConnection, "main", sqliteConnection, "main") else {
            throw SQLiteError(on: target.sqliteConnection)
        }
        // One step copies every page; a lock another process holds is waited for by the
        // source's busy timeout, after which the step fails with SQLITE_BUSY.
        var code: Int32
        repeat { code = sqlite3_backup_step(backup, -1) } while code == SQLITE_OK
        let finished = sqlite3_backup_finish(backup)
        guard code == SQLITE_DONE, finished == SQLITE_OK else {
            // The failure is recorded on the target connection (the source's lock, a full disk).
            throw SQLiteError(on: target.sqliteConnection)
        }
    }
}
