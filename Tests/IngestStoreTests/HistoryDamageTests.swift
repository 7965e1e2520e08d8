import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// A history that is damaged, or that went back under a consumer (a restore, a copy put
/// in its place, a file deleted while followed): refused by name, never answered with a
/// gap or with rows no table ever gave.
@Suite struct HistoryDamageTests {
    static let afresh = "fetch the objects afresh and continue from the current token (coordinator.currentHistoryToken(), or the last line of ingest history)"

    /// Saves `count` photos in one save (rows 1…count in a new store) and returns its position.
    @discardableResult
    static func savePhotos(_ coordinator: PersistentStoreCoordinator, _ count: Int, prefix: String = "p") throws -> Int64 {
        let start = try coordinator.currentHistoryToken()
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        try context.performAndWait {
            for number in 0..<count { insertPhoto(context, id: "\(prefix)\(number)") }
            try context.save()
        }
        return try #require(try coordinator.fetchHistory(after: start).transactions.last).position
    }

    @Test(arguments: StoreBackend.available) func aRowListPastTheTablesRowsIsRefusedBeforeItsRowsAreMade(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let start = try coordinator.currentHistoryToken()
        let position = try Self.savePhotos(coordinator, 3)
        #expect(try coordinator.historyProblems() == [])
        func damage(_ rows: String) throws {
            _ = try coordinator.writing { connection in
                try connection.execute("UPDATE \(quoted(HistoryLog.changesTable)) SET rows = ? WHERE position = ?", [.string(rows), .int(position)])
            }
        }
        // Rows 4 and 5 were never given: read as they are, they would be changes of objects that never were.
        try damage("2-5")
        let past = "a damaged row in _ingest_history_changes at position \(position): it lists Photo row 5, past the highest row number Photo's table has given (3)"
        #expect(throws: StoreError.history(past)) { try coordinator.fetchHistory(after: start) }
        #expect(try coordinator.historyProblems() == [past])
        // A billion rows: refused as fast, with nothing allocated for them.
        try damage("1-999999999")
        let huge = "a damaged row in _ingest_history_changes at position \(position): it lists Photo row 999999999, past the highest row number Photo's table has given (3)"
        #expect(throws: StoreError.history(huge)) { try coordinator.fetchHistory(after: start) }
        #expect(try coordinator.historyProblems() == [huge])
        // Runs out of order (RowList never writes them so) could repeat rows without end.
        try damage("1-3,1-3")
        #expect(throws: StoreError.history("a damaged row in _ingest_history_changes at position \(position)")) { try coordinator.fetchHistory(after: start) }
        #expect(try coordinator.historyProblems() == ["a damaged row in _ingest_history_changes at position \(position): its entity or row list cannot be read"])
        // Deleted rows keep their numbers: a history naming them is sound.
        try damage("1-3")
        let context = ObjectContext(coordinator: coordinator, name: "deleter")
        try context.performAndWait {
            for photo in try context.fetch("Photo") { context.delete(photo) }
            try context.save()
        }
        // (The deletes come in the order the fetch gave the objects.)
        #expect(try coordinator.fetchHistory(after: start).changes.map { "\($0.kind) \($0.objectID.primaryKey!)" }.sorted()
                == ["delete 1", "delete 2", "delete 3", "insert 1", "insert 2", "insert 3"])
        #expect(try coordinator.historyProblems() == [])
    }

    @Test func aSQLiteTokenAheadOfTheStoreIsRefused() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        try Self.savePhotos(coordinator, 1)
        let ahead = HistoryToken(storeID: coordinator.storeID, position: 1_000)
        #expect(throws: StoreError.history("token \(ahead) is ahead of \(coordinator.path)'s history (its next position is 2): "
                                           + "the store was restored from a backup or replaced by a copy since the token was taken; " + Self.afresh)) {
            try coordinator.fetchHistory(after: ahead)
        }
        // The next position itself is "now": accepted.
        #expect(try coordinator.fetchHistory(after: HistoryToken(storeID: coordinator.storeID, position: 2)).transactions.isEmpty)
    }

    /// A server of its own: no other test's transaction moves its transaction IDs on between
    /// the read of xmax and the fetch.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aPostgreSQLTokenAheadOfTheServerIsRefused() throws {
        let (coordinator, directory, server) = try HistoryTests.storeOfItsOwn(on: .postgres)
        _ = (directory, server)
        try Self.savePhotos(coordinator, 1)
        let id = coordinator.storeID.uuidString.lowercased()
        let admin = try PostgresConnection(PostgresURL(try #require(server).url))
        for text in ["999999999:999999999:@\(id)", "3:3:/999999999:999999999:/999999999@\(id)"] {
            let ahead = try #require(HistoryToken(text))
            let xmax = try #require(try admin.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())")[0, 0])
            #expect(throws: StoreError.history("token \(ahead) is ahead of \(coordinator.path)'s history (its next transaction is \(xmax)): "
                                               + "the token is of another server, or the database was restored from a backup since the token was taken; " + Self.afresh)) {
                try coordinator.fetchHistory(after: ahead)
            }
        }
        #expect(try coordinator.fetchHistory(after: try coordinator.currentHistoryToken()).transactions.isEmpty)
    }

    /// The issue's scenario: a backup taken, transactions made and given to a consumer, the
    /// backup put back, more transactions made (fewer, then more, than before the restore).
    @Test func aStoreRestoredFromABackupRefusesTheTokensItsHistoryNoLongerHas() throws {
        let directory = try TemporaryDirectory()
        let store = directory.file("store.sqlite"), backup = directory.file("backup.sqlite")
        func open() throws -> PersistentStoreCoordinator { try PersistentStoreCoordinator(model: TestModel.model, path: store) }
        // Each coordinator is closed before the file is copied: its WAL is then in the file.
        _ = try Self.savePhotos(try open(), 2, prefix: "a")
        try FileManager.default.copyItem(atPath: store, toPath: backup)
        let (token, oldStyle) = try { () throws -> (HistoryToken, HistoryToken) in
            let coordinator = try open()
            for number in 0..<3 { try Self.savePhotos(coordinator, 1, prefix: "b\(number)-") }
            let token = try coordinator.currentHistoryToken()
            #expect(token.description.hasPrefix("5.") && HistoryToken(token.description) == token, "\(token)")
            // After the store's last transaction nothing more, as before.
            #expect(try coordinator.fetchHistory(after: token).transactions.isEmpty)
            return (token, HistoryToken(storeID: token.storeID, position: token.position))
        }()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: store)

        let restored = try open()
        #expect(restored.storeID == token.storeID, "a copy shares its store's ID")
        try Self.savePhotos(restored, 1, prefix: "c")
        #expect(throws: StoreError.history("token \(token) is ahead of \(store)'s history (its next position is 3): "
                                           + "the store was restored from a backup or replaced by a copy since the token was taken; " + Self.afresh)) {
            try restored.fetchHistory(after: token)
        }
        for number in 0..<4 { try Self.savePhotos(restored, 1, prefix: "d\(number)-") }
        let mismatch = StoreError.history("token \(token) does not match \(store)'s history at position 4: "
                                          + "the store was restored from a backup or replaced by a copy since the token was taken; " + Self.afresh)
        #expect(throws: mismatch) { try restored.fetchHistory(after: token) }
        #expect(throws: mismatch) { try restored.purgeHistory(before: token) }
        // A token written before fingerprints cannot tell: read as before.
        #expect(try restored.fetchHistory(after: oldStyle).transactions.map(\.position) == [5, 6])
        // The restored store's own tokens read on.
        let now = try restored.currentHistoryToken()
        #expect(try restored.fetchHistory(after: now).transactions.isEmpty)
    }

    @Test func aPurgeUpToATokenLeavesItReadable() throws {
        let (coordinator, directory) = try TestModel.store()
        defer { withExtendedLifetime(directory) {} }
        for number in 0..<3 { try Self.savePhotos(coordinator, 1, prefix: "p\(number)-") }
        let token = try coordinator.currentHistoryToken()
        // The transaction its fingerprint names is purged; the purge kept its fingerprint.
        try coordinator.purgeHistory(before: token)
        #expect(try coordinator.fetchHistory(after: token) == HistoryFetch(transactions: [], token: token))
        #expect(try coordinator.fetchHistory(after: nil) == HistoryFetch(transactions: [], token: token))
        #expect(try coordinator.currentHistoryToken() == token)
        let other = try #require(HistoryToken("\(token.position).00000000@\(coordinator.storeID)"))
        #expect(throws: StoreError.history("token \(other) does not match \(coordinator.path)'s history at position \(token.position - 1): "
                                           + "the store was restored from a backup or replaced by a copy since the token was taken; " + Self.afresh)) {
            try coordinator.fetchHistory(after: other)
        }
    }

    @Test func tokensKeepTheirFingerprintInTextAndJSONAndOldFormsStillRead() throws {
        let id = UUID(uuidString: "6F1C2A3E-0000-4000-8000-000000000001")!
        let token = try #require(HistoryToken("1042.9f3a1c2e@6f1c2a3e-0000-4000-8000-000000000001"))
        #expect(token.position == 1_042 && token.fingerprint == "9f3a1c2e" && token.storeID == id)
        #expect(token.description == "1042.9f3a1c2e@6f1c2a3e-0000-4000-8000-000000000001")
        let json = try JSONEncoder().encode(token)
        #expect(String(decoding: json, as: UTF8.self).contains(#""fingerprint":"9f3a1c2e""#))
        #expect(try JSONDecoder().decode(HistoryToken.self, from: json) == token)
        let old = try #require(HistoryToken("1042@6f1c2a3e-0000-4000-8000-000000000001"))
        #expect(old == HistoryToken(storeID: id, position: 1_042) && old.fingerprint == nil)
        let oldJSON = Data(#"{"storeID":"\#(id.uuidString)","position":1042}"#.utf8)
        #expect(try JSONDecoder().decode(HistoryToken.self, from: oldJSON) == old)
        for bad in ["1042.9F3A1C2E", "1042.9f3a1c2", "1042.", ".9f3a1c2e", "-1.9f3a1c2e", "1042.9f3a1c2e.1"] {
            #expect(HistoryToken(bad + "@\(id)") == nil, "\(bad)")
        }
        let badJSON = Data(#"{"storeID":"\#(id.uuidString)","position":1042,"fingerprint":"zz"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HistoryToken.self, from: badJSON) }
    }

    enum Gone: String, CaseIterable, Sendable { case deleted, replaced }

    @Test(arguments: Gone.allCases) func aFollowedSQLiteStoreThatIsDeletedOrReplacedEndsTheStream(gone: Gone) async throws {
        let (coordinator, directory) = try TestModel.store()
        try Self.savePhotos(coordinator, 1)
        let path = coordinator.path
        let stream = coordinator.history(after: nil, interval: .milliseconds(20))
        let reader = Task { () -> String in
            var iterator = stream.makeAsyncIterator()
            do {
                // The first transaction comes after the stream opened what it watches.
                guard try await iterator.next() != nil else { return "ended before the first transaction" }
                switch gone {
                case .deleted:
                    try FileManager.default.removeItem(atPath: path)
                case .replaced:
                    _ = try PersistentStoreCoordinator(model: TestModel.model, path: directory.file("other.sqlite"))
                    guard rename(directory.file("other.sqlite"), path) == 0 else { return "rename failed: \(errno)" }
                }
                while try await iterator.next() != nil {}
                return "ended without an error"
            } catch {
                return "\(error)"
            }
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            reader.cancel()
        }
        let outcome = await reader.value
        watchdog.cancel()
        let expected = gone == .deleted ? "\(path) was deleted while its history was being followed"
            : "\(path) was replaced by another file while its history was being followed (a restore, or a new store made there)"
        #expect(outcome == "\(StoreError.history(expected))")
    }

    @Test func waitsAreKeptBetweenAMillisecondAndADay() {
        #expect(HistoryWaiter.clamped(2_147_483.648) == 86_400)
        #expect(HistoryWaiter.clamped(.infinity) == 86_400)
        #expect(HistoryWaiter.clamped(0) == 0.001 && HistoryWaiter.clamped(-3) == 0.001)
        #expect(HistoryWaiter.clamped(.nan) == 0.1 && HistoryWaiter.clamped(0.25) == 0.25)
    }

    /// `Int32(seconds * 1000)` trapped for waits past 24.8 days; now they wait up to a day,
    /// and a notification still ends them at once.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aPostgreSQLWaitOfAnyLengthNeitherTrapsNorOutlastsANotification() async throws {
        let (coordinator, directory) = try TestModel.store(on: .postgres)
        defer { withExtendedLifetime(directory) {} }
        let url = try PostgresURL(coordinator.path)
        let listener = try PostgresConnection(url)
        try listener.execute("LISTEN ingest_test")
        #expect(try listener.waitForNotification(seconds: -5) == false)
        #expect(try listener.waitForNotification(seconds: .nan) == false)
        Thread.detachNewThread {
            usleep(200_000)
            _ = try? PostgresConnection(url).execute("NOTIFY ingest_test")
        }
        let started = ContinuousClock.now
        #expect(try listener.waitForNotification(seconds: 2_147_483.648) == true)
        #expect(ContinuousClock.now - started < .seconds(20))

        // Through the stream: an interval of 2,147,483,648 seconds, woken by another coordinator's save.
        let other = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: coordinator.path)!)
        let token = try other.currentHistoryToken()
        let writer = Task.detached {
            try await Task.sleep(for: .milliseconds(300))
            try HistoryDamageTests.savePhotos(coordinator, 1)
        }
        var seen: [Int] = []
        for try await transaction in other.history(after: token, interval: .seconds(2_147_483_648)) {
            seen.append(transaction.changes.count)
            break
        }
        try await writer.value
        #expect(seen == [1])
    }
}
