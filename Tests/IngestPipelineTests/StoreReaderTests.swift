import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// `query` and `status` only read: they never wait for an importer's write lock, never
/// change a file (an Ingest store or any other), and need no more than SELECT rights.
@Suite struct StoreReaderTests {
    static let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    /// An importer stopped while it holds the write lock (SIGSTOP mid-save) is stood in
    /// for by a connection with an open write transaction.
    @Test func readersAnswerAtOnceWhileAWriterHoldsTheLock() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", FeedGenerator(records: 500).bytes())
        let store = dir.file("store.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"]).status == 0)
        let writer = try SQLiteFile(store)
        try writer.execute("BEGIN IMMEDIATE; DELETE FROM Photo")
        for arguments in [["query", store, "Photo", "--count"], ["status", store], ["status", store, "--check"],
                          ["query", store, "Photo", "--where", "views > 0", "--limit", "1", "--fields", "id"]] {
            let started = Date()
            let outcome = try IngestBinary.run(arguments)
            #expect(outcome.status == 0, "\(arguments): \(outcome.stderr)")
            #expect(Date().timeIntervalSince(started) < 5, "\(arguments) waited for the writer")
            if arguments.last == "--count" { #expect(outcome.stdout == "500\n", "the last committed state") }
        }
        try writer.execute("ROLLBACK")
    }

    @Test(arguments: [false, true])
    func aRefusedImportLeavesAForeignDatabaseUntouched(deleteStore: Bool) throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"[{"id":"a"}]"#.utf8))
        let path = dir.file("theirs.db")
        try SQLiteFile(path).execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        let before = try FileOps.readFile(path)
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", path, "--quiet"]
                                           + (deleteStore ? ["--delete-store"] : []))
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: \(path) is not an Ingest store: it has tables (t) but no _ingest_metadata\n")
        #expect(try FileOps.readFile(path) == before, "not switched to WAL mode, not deleted")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["feed.json", "theirs.db"], "no lock file, no WAL beside it")
        let text = try dir.write("notes.sqlite", Array("not a database".utf8))
        let refused = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", text, "--quiet"])
        #expect(refused.stderr == "ingest: \(text) is not an Ingest store: the file is not a SQLite database\n")
        #expect(try FileOps.readFile(text) == Array("not a database".utf8))
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aReaderWithSelectRightsOnlyCanQueryAndSeeStatus() throws {
        let server = try PostgresServer()
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", FeedGenerator(records: 300).bytes())
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", server.url, "--quiet"]).status == 0)
        _ = try server.psql(["-c", "CREATE ROLE reader LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader"])
        let user = getuid() == 0 ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? "postgres")
        let reader = server.url.replacingOccurrences(of: "postgresql://\(user)@", with: "postgresql://reader@")
        let count = try IngestBinary.run(["query", reader, "Photo", "--count"])
        #expect(count.status == 0 && count.stdout == "300\n", "\(count.stderr)")
        let rows = try IngestBinary.run(["query", reader, "Photo", "--sort", "id", "--limit", "1", "--fields", "id,whoTook.name"])
        #expect(rows.status == 0, "\(rows.stderr)")
        let status = try IngestBinary.run(["status", reader])
        #expect(status.status == 0 && status.stdout.contains("Photo: 300"), "\(status.stdout)\(status.stderr)")
        let other = try dir.write("other.json", FeedGenerator(records: 20, seed: 9).bytes())
        let write = try IngestBinary.run(["import", other, "--pipeline", Self.pipeline, "--store", reader, "--quiet"])
        #expect(write.status == 1, "writing still needs write rights")
    }
}
