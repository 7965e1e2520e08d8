import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Errors a program can match: one neutral reason for each backend's failure, SQLSTATEs by
/// name, server answers read without trapping, validation problems by their parts.
@Suite struct StoreErrorTests {
    /// A unique index made behind the store's back refuses a second photo of the same title:
    /// SQLite's result code and PostgreSQL's SQLSTATE differ, the reason does not.
    @Test(arguments: StoreBackend.available)
    func aUniqueViolationHasTheSameReasonOnEveryBackend(backend: StoreBackend) throws {
        let directory = try TemporaryDirectory()
        let coordinator: PersistentStoreCoordinator
        let index = #"CREATE UNIQUE INDEX "one_title" ON "Photo" ("title")"#
        switch backend {
        case .sqlite:
            let path = directory.file("store.sqlite")
            coordinator = try PersistentStoreCoordinator(model: TestModel.model, path: path)
            try SQLiteFile(path).execute(index)
        case .postgres:
            let url = try StoreBackend.newDatabase()
            coordinator = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: url)!)
            try PostgresConnection(PostgresURL(url)).execute(index)
        case .memory:
            coordinator = try PersistentStoreCoordinator(inMemory: TestModel.model)
            try coordinator.write { db in try db.execute(sql: index) }
        }
        let context = ObjectContext(coordinator: coordinator)
        let error = context.performAndWait {
            insertPhoto(context, id: "p1", title: "the same")
            insertPhoto(context, id: "p2", title: "the same")
            return #expect(throws: StoreError.self) { try context.save() }
        }
        #expect(error?.reason == .constraint(.unique), "\(String(describing: error))")
        #expect(error?.isConstraintFailure == true)
        switch error {
        case .database(_, let code)?:
            #expect(backend.speaksSQLite && code == .SQLITE_CONSTRAINT_UNIQUE)
        case .postgres(let failure)?:
            #expect(backend == .postgres && failure.sqlState == .uniqueViolation)
            #expect(error?.sql?.contains("Photo") == true, "\(String(describing: error?.sql))")
            #expect(error?.underlying as? PostgresError == failure)
        default:
            Issue.record("not the backend's own error: \(String(describing: error))")
        }
    }

    @Test func sqlStatesAreMatchedByName() {
        typealias State = PostgresError.SQLState
        #expect(State.uniqueViolation.rawValue == "23505")
        #expect(State.deadlockDetected == "40P01")
        #expect(State.serializationFailure == "40001")
        #expect(State.lockNotAvailable == "55P03")
        #expect(State.queryCanceled == "57014")
        #expect(State.uniqueViolation.errorClass == .integrityConstraintViolation)
        #expect(State.uniqueViolation.isInClass(.integrityConstraintViolation))
        #expect(!State.uniqueViolation.isInClass(.dataException))
        let deadlock = PostgresError.server("deadlock detected", sqlState: .deadlockDetected, sql: "UPDATE t SET n = 1")
        #expect(deadlock.sqlState == .deadlockDetected && deadlock.sql == "UPDATE t SET n = 1")
        #expect(deadlock.isTransactionConflict && deadlock.reason == .transactionConflict)
        #expect(PostgresError.server("terminating connection", sqlState: .adminShutdown).isConnectionLoss)
        #expect(PostgresError.server("server closed the connection unexpectedly", sqlState: .connectionFailure).reason == .connectionLost)
        #expect(PostgresError.server("value too long", sqlState: "22001").isAboutData)
        #expect(PostgresError.connection(target: "db", reason: "refused").sqlState == nil)
    }

    @Test func eachBackendsFailureHasItsNeutralReason() {
        #expect(StoreError.database("database is locked", code: .SQLITE_BUSY).reason == .busy)
        #expect(StoreError.database("locked", code: .SQLITE_BUSY_SNAPSHOT).reason == .transactionConflict)
        #expect(StoreError.database("NOT NULL constraint failed", code: .SQLITE_CONSTRAINT_NOTNULL).reason == .constraint(.notNull))
        #expect(StoreError.database("no notes", code: .SQLITE_CONSTRAINT_TRIGGER).reason == .constraint(.other))
        #expect(StoreError.database("interrupted", code: .SQLITE_INTERRUPT).reason == .cancelled)
        #expect(StoreError.diskFull(path: "/s", freeBytes: 0).reason == .diskFull)
        #expect(StoreError.postgres(.server("could not extend file", sqlState: .diskFull)).reason == .diskFull)
        #expect(StoreError.postgres(.server("canceling statement due to statement timeout", sqlState: .queryCanceled)).reason == .cancelled)
        #expect(StoreError.postgres(.server("could not obtain lock", sqlState: .lockNotAvailable)).reason == .busy)
        #expect(StoreError.postgres(.server("insert or update violates foreign key", sqlState: .foreignKeyViolation)).reason == .constraint(.foreignKey))
        #expect(StoreError.postgres(.connection(target: "db", reason: "refused")).reason == .connectionLost)
        #expect(StoreError.validation(["a new Photo: id is required"]).reason == nil)
        #expect(StoreError.unknownEntity("Nothing").reason == nil)
    }

    @Test(arguments: [
        StoreError.validation(["a new Photo: id is required"]),
        .database("disk I/O error", code: .SQLITE_IOERR),
        .postgres(.server("duplicate key value violates unique constraint", sqlState: .uniqueViolation)),
        .diskFull(path: "/tmp/store.sqlite", freeBytes: 4096),
        .unknownEntity("Nothing"),
    ])
    func localizedDescriptionIsTheDescription(error: StoreError) {
        #expect(error.localizedDescription == error.description)
        let postgres = PostgresError.unexpectedResult(sql: "SELECT 1", row: 0, column: 0, expected: "an integer", found: nil)
        #expect(postgres.localizedDescription == postgres.description)
    }

    /// A server that answers NULL, or text, where Ingest reads an integer: a thrown error
    /// naming the statement and the place, never a trap.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aNullOrTextWhereAnIntegerIsExpectedThrowsNamingTheStatement() throws {
        let connection = try PostgresConnection(PostgresURL(StoreBackend.newDatabase()))
        let sql = "SELECT NULL::bigint, 'seven', '7', 2.5"
        let rows = try connection.execute(sql)
        #expect(throws: PostgresError.unexpectedResult(sql: sql, row: 0, column: 0, expected: "an integer", found: nil)) { try rows.int(0, 0) }
        let text = #expect(throws: PostgresError.self) { try rows.int64(0, 1) }
        #expect(text?.description == #"PostgreSQL answered "seven" where an integer was expected (row 1, column 2 of SELECT NULL::bigint, 'seven', '7', 2.5)"#)
        #expect(text?.sql == sql)
        #expect(throws: PostgresError.self) { try rows.int(0, 3) }
        #expect(throws: PostgresError.self) { try rows.text(0, 0) }
        let past = #expect(throws: PostgresError.self) { try rows.text(1, 0) }
        #expect(past?.description.contains("the result has 1 row(s) of 4 column(s)") == true, "\(String(describing: past))")
        #expect(try rows.int(0, 2) == 7 && rows.double(0, 3) == 2.5 && rows.text(0, 1) == "seven")
        #expect(StoreError.postgres(text!).reason == .corrupt)
        let refused = #expect(throws: PostgresError.self) { try connection.execute("SELECT * FROM no_such_table") }
        #expect(refused?.sqlState == "42P01" && refused?.sql == "SELECT * FROM no_such_table")
    }

    @Test func validationProblemsNameTheirObjectPropertyAndRule() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let error = context.performAndWait {
            _ = context.insert("Photo")
            context.insert("Everything")["a_date"] = .date(Date(timeIntervalSince1970: StoredDate.endSince1970))
            return #expect(throws: StoreError.self) { try context.save() }
        }
        guard case .validation(let problems)? = error else { Issue.record("\(String(describing: error))"); return }
        let required = try #require(problems.first { $0.rule == .required })
        #expect(required.object == "a new Photo" && required.entity == "Photo" && required.property == "id")
        #expect(required.message == "is required" && required.description == "a new Photo: id is required")
        #expect(required.objectID?.entityName == "Photo" && required.key.isEmpty)
        let date = try #require(problems.first { $0.rule == .dateRange })
        #expect(date.entity == "Everything" && date.property == "a_date")
        // Written as text, a problem equals the one the store reports with those words.
        #expect(problems.contains("a new Photo: id is required"))
    }

    @Test func aDeniedDeleteIsAProblemOfItsRelationship() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator)
        let error = try context.performAndWait {
            let album = context.insert("Album")
            let photo = insertPhoto(context, id: "p1")
            photo.setObject(album, forKey: "album")
            try context.save()
            context.delete(album)
            return #expect(throws: StoreError.self) { try context.save() }
        }
        guard case .validation(let problems)? = error, let problem = problems.first else { Issue.record("\(String(describing: error))"); return }
        #expect(problem.rule == .deleteDenied && problem.entity == "Album" && problem.property == "photos")
        #expect(problem.description == "cannot delete \(problem.object): Album.photos has 1 related object(s) and the deny rule")
    }
}
