import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// The store's own layer over SQLite's C API: what the object graph and the batch path
/// rely on from a connection and its pool.
@Suite struct SQLiteConnectionTests {
    func count(_ db: SQLiteDatabase) throws -> Int? {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM t")
    }

    @Test func aReadSeesTheLastCommitWhileAWriteIsOpen() throws {
        let directory = try TemporaryDirectory()
        let pool = try SQLiteConnectionPool(path: directory.file("s.sqlite"), shape: .wal)
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (x); INSERT INTO t VALUES (1)") }
        let seenInside = try pool.write { db in
            try db.execute(sql: "INSERT INTO t VALUES (2)")
            // A reader connection of its own: it neither waits for this write nor sees it.
            return try pool.read { reader in try count(reader) }
        }
        #expect(seenInside == 1)
        #expect(try pool.read { try count($0) } == 2)
    }

    /// The readers close before the writer, which checkpoints the WAL into the file and
    /// removes it: a store closed is one file.
    @Test func aClosedPoolLeavesTheStoreInOneFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("s.sqlite")
        do {
            let pool = try SQLiteConnectionPool(path: path, shape: .wal)
            try pool.write { db in try db.execute(sql: "CREATE TABLE t (x); INSERT INTO t VALUES (1)") }
            #expect(try pool.read { try count($0) } == 1)
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let reopened = try SQLiteConnectionPool(path: path, shape: .single, configuration: .init(readOnly: true))
        #expect(try reopened.read { try count($0) } == 1)
    }

    /// A bulk load's checkpoints beside the writer (`WALCheckpointer`): committed pages reach
    /// the database file while the writer only commits (its own checkpoints are off here),
    /// and stop reaching it once checkpointing stops.
    @Test func checkpointingBesideTheWriterCopiesCommittedPagesIntoTheFileUntilStopped() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("s.sqlite")
        let pool = try SQLiteConnectionPool(path: path, shape: .wal)
        func fileSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int ?? 0 }
        func insert(_ rows: Int) throws {
            try pool.write { db in
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS t (x)")
                try db.execute(sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)) INSERT INTO t SELECT randomblob(200) FROM n")
            }
        }
        // Without the checkpointer, commits stay in the WAL.
        try insert(5_000)
        let before = fileSize()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(fileSize() == before)

        pool.startCheckpointing(every: 0.02)
        try insert(5_000)
        let deadline = Date().addingTimeInterval(10)
        while fileSize() < before + 1_000_000, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(fileSize() >= before + 1_000_000, "the file grew from \(before) to \(fileSize()) bytes")

        pool.stopCheckpointing()
        let stopped = fileSize()
        try insert(5_000)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(fileSize() == stopped)
        #expect(try pool.read { try count($0) } == 15_000)
    }

    /// The checkpointer opens the store it is given and never makes one: a store removed
    /// meanwhile stays removed.
    @Test func aCheckpointerMakesNoStoreWhereThereIsNone() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gone.sqlite")
        let checkpointer = WALCheckpointer(path: path, interval: 0.01)
        checkpointer.start()
        Thread.sleep(forTimeInterval: 0.1)
        checkpointer.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aWriteThatThrowsLeavesNothing() throws {
        struct Refused: Error {}
        let pool = try SQLiteConnectionPool(inMemory: .init())
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (x)") }
        #expect(throws: Refused.self) {
            try pool.write { db in
                try db.execute(sql: "INSERT INTO t VALUES (1)")
                throw Refused()
            }
        }
        #expect(try pool.read { try count($0) } == 0)
        // The connection is out of its transaction: the next write starts one of its own.
        try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
        #expect(try pool.read { try count($0) } == 1)
    }

    @Test func aFailedSavepointUndoesOnlyWhatItWrote() throws {
        let pool = try SQLiteConnectionPool(inMemory: .init())
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (x UNIQUE)") }
        try pool.write { db in
            try db.execute(sql: "INSERT INTO t VALUES (1)")
            let error = #expect(throws: SQLiteError.self) {
                try db.inSavepoint {
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    try db.execute(sql: "INSERT INTO t VALUES (1)")
                }
            }
            #expect(error?.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE)
            #expect(error?.resultCode == .SQLITE_CONSTRAINT)
            try db.execute(sql: "INSERT INTO t VALUES (3)")
        }
        #expect(try pool.read { try Int.fetchAll($0, sql: "SELECT x FROM t ORDER BY x") } == [1, 3])
    }

    @Test func executeRunsEveryStatementAndGivesEachItsArguments() throws {
        let pool = try SQLiteConnectionPool(inMemory: .init())
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE t (x, y); INSERT INTO t VALUES (?, ?); INSERT INTO t VALUES (?, 'c');  ",
                           arguments: ["a", Int64(7), "b"])
        }
        let rows = try pool.read { db in
            try String.fetchAll(db, sql: "SELECT x || ':' || coalesce(y, 'NULL') FROM t ORDER BY x")
        }
        #expect(rows == ["a:7", "b:c"])
        #expect(try pool.read { try String.fetchOne($0, sql: "SELECT x FROM t WHERE y = ?", arguments: [99]) } == nil)
        #expect(try pool.read { try $0.tableExists("T") })
        let tooMany = #expect(throws: SQLiteError.self) {
            try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: ["a", "b", "c"]) }
        }
        #expect(tooMany?.extendedResultCode == .SQLITE_MISUSE)
        #expect(tooMany?.message == "3 argument(s) do not match the statement's parameters")
        let tooFew = #expect(throws: SQLiteError.self) { try pool.read { db in try String.fetchOne(db, sql: "SELECT x FROM t WHERE y = ?") } }
        #expect(tooFew?.extendedResultCode == .SQLITE_MISUSE)
        #expect(try pool.read { try count($0) } == 2, "the refused write left nothing")
    }

    /// A trigger's `RAISE(ROLLBACK)` ends the transaction inside the write: what the body runs
    /// after it must not go to disk one statement at a time (autocommit), as GRDB's
    /// transaction blocks refused it too.
    @Test func aTransactionSQLiteEndedStopsEveryLaterStatementOfItsWrite() throws {
        let pool = try SQLiteConnectionPool(inMemory: .init())
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE t (x); CREATE TRIGGER refuse BEFORE INSERT ON t WHEN new.x = 2 BEGIN SELECT RAISE(ROLLBACK, 'no twos'); END")
        }
        var refused: SQLiteError?
        let error = #expect(throws: SQLiteError.self) {
            try pool.write { db in
                try db.execute(sql: "INSERT INTO t VALUES (1)")
                do {
                    try db.inSavepoint { try db.execute(sql: "INSERT INTO t VALUES (2)") }
                } catch let error as SQLiteError {
                    refused = error
                }
                try db.inSavepoint { try db.execute(sql: "INSERT INTO t VALUES (3)") }
            }
        }
        #expect(refused?.extendedResultCode == .SQLITE_CONSTRAINT_TRIGGER)
        #expect(error?.resultCode == .SQLITE_ABORT)
        #expect(try pool.read { try count($0) } == 0)
        try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (4)") }
        #expect(try pool.read { try count($0) } == 1)
    }

    @Test func aPrimaryCodeInACaseMatchesItsExtendedCodesOnly() {
        func matches(_ code: SQLiteResultCode, _ pattern: SQLiteResultCode) -> Bool {
            if case pattern = code { true } else { false }
        }
        #expect(matches(.SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT))
        #expect(matches(.SQLITE_CONSTRAINT, .SQLITE_CONSTRAINT))
        #expect(!matches(.SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_NOTNULL))
        #expect(!matches(.SQLITE_CONSTRAINT, .SQLITE_CONSTRAINT_UNIQUE))
        #expect(!matches(.SQLITE_BUSY_SNAPSHOT, .SQLITE_CONSTRAINT))
    }

    @Test func aWriteInsideAWriteOfTheSamePoolStopsTheProgramInsteadOfWaiting() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let pool = try SQLiteConnectionPool(inMemory: .init())
            try pool.write { _ in try pool.write { _ in } }
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("inside a write of the same pool would wait for itself"))
        }
    }

    @Test func textWithANULCharacterComesBackWhole() throws {
        let pool = try SQLiteConnectionPool(inMemory: .init())
        let text = "a\u{0}b"
        let back = try pool.write { db in
            try db.execute(sql: "CREATE TABLE t (x TEXT); INSERT INTO t VALUES (?)", arguments: [text])
            return try String.fetchOne(db, sql: "SELECT x FROM t")
        }
        #expect(back == text)
    }

    @Test func aFileThatIsNotADatabaseFailsAsItOpens() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.sqlite")
        try Data(String(repeating: "not a database\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SQLiteError.self) { try SQLiteConnectionPool(path: path, shape: .single) }
        #expect(error?.resultCode == .SQLITE_NOTADB)
        #expect(StoreError.sqlite(error!, path: path) == .notAStore(path: path, reason: "the file is not a SQLite database"))
    }

    @Test func foreignKeysAreEnforcedAndDoubleQuotesNameColumnsOnly() throws {
        let pool = try SQLiteConnectionPool(inMemory: .init())
        let error = #expect(throws: SQLiteError.self) {
            try pool.write { db in
                try db.execute(sql: "CREATE TABLE a (id INTEGER PRIMARY KEY); CREATE TABLE b (a REFERENCES a(id)); INSERT INTO b VALUES (5)")
            }
        }
        #expect(error?.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY)
        #expect(throws: SQLiteError.self) {
            try pool.write { db in try db.execute(sql: #"CREATE TABLE c (x); SELECT "nothing" FROM c"#) }
        }
    }

    @Test func aBackupCopiesACommittedStoreWhole() throws {
        let directory = try TemporaryDirectory()
        let pool = try SQLiteConnectionPool(path: directory.file("s.sqlite"), shape: .wal)
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO t SELECT i FROM n") }
        let source = try SQLiteDatabase(path: directory.file("s.sqlite"), readOnly: true, busyTimeout: 1)
        let target = try SQLiteDatabase(path: directory.file("copy.sqlite"), readOnly: false, busyTimeout: nil)
        try source.backup(to: target)
        #expect(try Int.fetchOne(target, sql: "SELECT sum(x) FROM t") == 500_500)
    }
}
