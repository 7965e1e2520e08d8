import Dispatch
import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing

/// `ingest history` and `ingest status` when something is wrong under them: an absurd
/// interval, a followed store deleted or replaced, a damaged history row, a PostgreSQL
/// address that takes the connection and never answers. Each ends with its own message
/// and exit status, never with a crash, an unbounded allocation or a wait without end.
@Suite struct HistoryFaultCommandTests {
    static let photos = HistoryCommandTests.photos

    /// A store with the history of a 20-record import.
    static func importedStore(_ dir: TemporaryDirectory, _ name: String = "store.sqlite") throws -> String {
        let feed = dir.file("feed-\(name).json")
        try FeedGenerator(records: 20, seed: 3).write(to: feed)
        let store = dir.file(name)
        let imported = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", store, "--quiet"])
        #expect(imported.status == 0, "\(imported.stderr)")
        return store
    }

    /// A running `ingest` whose output goes to files, so the test can watch it while it runs.
    struct Watched {
        let process: Process
        let out: String
        let err: String

        init(_ arguments: [String], in dir: TemporaryDirectory) throws {
            out = dir.file("out-\(UUID().uuidString)")
            err = dir.file("err-\(UUID().uuidString)")
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            _ = FileManager.default.createFile(atPath: err, contents: nil)
            process = Process()
            process.executableURL = URL(fileURLWithPath: IngestBinary.path)
            process.arguments = arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle(forWritingAtPath: out)
            process.standardError = FileHandle(forWritingAtPath: err)
            try process.run()
        }

        var printed: String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }

        /// Waits up to `seconds` for `condition`; whether it came.
        func wait(seconds: Double, for condition: () -> Bool) -> Bool {
            let deadline = Date.now.addingTimeInterval(seconds)
            while Date.now < deadline {
                if condition() { return true }
                usleep(20_000)
            }
            return condition()
        }

        /// Waits for the process to end (terminating it after `seconds`): its status and standard error.
        func finish(within seconds: Double) -> (status: Int32, stderr: String) {
            let process = process
            let ended = wait(seconds: seconds) { !process.isRunning }
            if !ended { process.terminate() }
            process.waitUntilExit()
            let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            return (ended ? process.terminationStatus : -1, stderr)
        }
    }

    @Test func anIntervalPastADayIsRefusedBeforeTheStoreIsOpened() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        let refused = try IngestBinary.run(["history", store, "--follow", "--interval", "2147483648"])
        #expect(refused.status == 2)
        #expect(refused.stderr.split(separator: "\n").first == "Error: --interval must be at most 86400000 ms (24 hours)", "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store))
        // A day itself is accepted: the store is then opened (and is not there).
        let day = try IngestBinary.run(["history", store, "--follow", "--interval", "86400000"])
        #expect(day.status == 1)
        #expect(day.stderr == "ingest: \(store) is not an Ingest store: there is no file there\n")
    }

    enum Gone: String, CaseIterable, Sendable { case deleted, replaced }

    @Test(arguments: Gone.allCases) func followingAStoreThatIsDeletedOrReplacedEndsWithExitStatus1(gone: Gone) throws {
        let dir = try TemporaryDirectory()
        let store = try Self.importedStore(dir)
        let other = gone == .replaced ? try Self.importedStore(dir, "other.sqlite") : nil
        let follow = try Watched(["history", store, "--follow", "--interval", "20"], in: dir)
        // Its first lines come after it opened what it watches.
        #expect(follow.wait(seconds: 60) { !follow.printed.isEmpty }, "nothing printed")
        if let other {
            #expect(rename(other, store) == 0)
        } else {
            try FileManager.default.removeItem(atPath: store)
        }
        let (status, stderr) = follow.finish(within: 30)
        let what = gone == .deleted ? "was deleted while its history was being followed"
            : "was replaced by another file while its history was being followed (a restore, or a new store made there)"
        #expect(status == 1)
        #expect(stderr == "ingest: the store's history: \(store) \(what)\n")
    }

    @Test func aDamagedHistoryRowIsRefusedByHistoryAndReportedByStatusCheck() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.importedStore(dir)
        let db = try SQLiteFile(store)
        let position = try #require(try db.int("SELECT min(position) FROM _ingest_history_changes WHERE entity = 'Photo'"))
        try db.execute("UPDATE _ingest_history_changes SET rows = '1-99999999' WHERE position = ? AND entity = 'Photo'", [.integer(position)])
        let highest = try #require(try db.int("SELECT next - 1 FROM _ingest_sequence WHERE entity = 'Photo'"))
        #expect(highest == 20)
        let damage = "a damaged row in _ingest_history_changes at position \(position): it lists Photo row 99999999, past the highest row number Photo's table has given (20)"
        let history = try IngestBinary.run(["history", store])
        #expect(history.status == 1)
        #expect(history.stdout == "")
        #expect(history.stderr == "ingest: the store's history: \(damage)\n")
        let check = try IngestBinary.run(["status", store, "--check"])
        #expect(check.status == 1)
        #expect(check.stdout == "\(store): check found 1 problem(s):\n  - \(damage)\n")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aDamagedPostgreSQLHistoryRowIsRefusedByHistoryAndReportedByStatusCheck() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 20, seed: 3).write(to: feed)
        let imported = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", server.url, "--quiet"])
        #expect(imported.status == 0, "\(imported.stderr)")
        let connection = try PostgresConnection(PostgresURL(server.url))
        let position = try #require(try connection.execute("SELECT min(position) FROM _ingest_history_changes WHERE entity = 'Photo'")[0, 0])
        try connection.execute("UPDATE _ingest_history_changes SET rows = '1-99999999' WHERE position = $1 AND entity = 'Photo'", [position])
        let highest = try #require(try connection.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence('\"Photo\"', '_pk')::regclass)")[0, 0])
        #expect(Int(highest)! >= 20)
        let damage = "a damaged row in _ingest_history_changes at position \(position): it lists Photo row 99999999, past the highest row number Photo's table has given (\(highest))"
        let history = try IngestBinary.run(["history", server.url])
        #expect(history.status == 1)
        #expect(history.stdout == "")
        #expect(history.stderr == "ingest: the store's history: \(damage)\n")
        let check = try IngestBinary.run(["status", server.url, "--check"])
        #expect(check.status == 1)
        #expect(check.stdout == "\(server.url): check found 1 problem(s):\n  - \(damage)\n")
    }

    @Test func statusOfAPostgreSQLAddressThatNeverAnswersGivesUpAfterItsConnectTimeout() throws {
        let listener = try SilentListener()
        let url = "postgresql://nobody@127.0.0.1:\(listener.port)/none?connect_timeout=1"
        let started = ContinuousClock.now
        let status = try IngestBinary.run(["status", url])
        let elapsed = ContinuousClock.now - started
        #expect(status.status == 1)
        #expect(status.stderr == "ingest: cannot connect to PostgreSQL at \(url) (host 127.0.0.1, port \(listener.port), database none, user nobody): "
                + "connection to server at \"127.0.0.1\", port \(listener.port) failed: timeout expired\n")
        // libpq waits at least 2 s; the default of 10 s would show the URL's value was dropped.
        #expect(elapsed >= .seconds(1.5) && elapsed < .seconds(8), "\(elapsed)")
    }
}
