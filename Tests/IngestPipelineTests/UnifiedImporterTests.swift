import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
import IngestPipeline

/// One `Importer`, one `ImportReport` and one `ImportStatus` for every store: a SQLite path
/// or a PostgreSQL URL (each PostgreSQL test starts a server of its own).
struct UnifiedImporterTests {
    /// 400 posts: 100 repeat a key seen earlier (updates), every 50th has views no int64
    /// holds (rejected on both stores), authors shared by many posts.
    static func feed(_ dir: TemporaryDirectory) throws -> String {
        let lines = (0..<400).map { i in
            let views = i % 50 == 49 ? #""many""# : String(i)
            return #"{"id":"p\#(i % 300)","title":"t\#(i)","views":\#(views),"author":{"id":\#(i % 7),"name":"a\#(i % 7)"}}"#
        }
        return try dir.write("posts.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
    }

    static let pipeline = Array(UpdateRuleTests.pipelineText().utf8)

    static func options(feed: String, store: String, workers: Int = 2) -> Importer.Options {
        Importer.Options(feed: feed, store: store, workers: workers, saveEvery: 5, chunkSize: 20)
    }

    @Test func postgreSQLOnlyOptionsAreRefusedOnSQLiteAndSQLiteOnlyOnesOnPostgreSQL() throws {
        let dir = try TemporaryDirectory()
        let feed = try Self.feed(dir)
        var sqlite = Self.options(feed: feed, store: dir.file("store.sqlite"))
        sqlite.leaseSeconds = 10
        let lease = #expect(throws: ImportError.self) { try Importer(pipeline: Self.pipeline, options: sqlite).run() }
        #expect(lease.map { "\($0)" }?.contains("leaseSeconds works on PostgreSQL stores only") == true)
        #expect(!FileManager.default.fileExists(atPath: dir.file("store.sqlite")), "refused before the store is made")
        var postgres = Self.options(feed: feed, store: "postgresql://localhost:1/none")
        postgres.keepChunks = true
        let keep = #expect(throws: ImportError.self) { try Importer(pipeline: Self.pipeline, options: postgres).run() }
        #expect(keep.map { "\($0)" }?.contains("keepChunks works on SQLite stores only") == true)
        let join = #expect(throws: ImportError.self) { try Importer(joining: nil, options: .init(store: dir.file("store.sqlite"))).run() }
        #expect(join.map { "\($0)" }?.contains("joining a run works on PostgreSQL stores only") == true)
    }

    @Test func cancellingASQLiteImportThroughImporterStopsItResumablyAndResumingFinishesIt() throws {
        let dir = try TemporaryDirectory()
        let feed = try Self.feed(dir)
        let store = dir.file("store.sqlite")
        // A SQLite run records its pipeline's path for the resume.
        let pipeline = try dir.write("pipeline.json", Self.pipeline)
        var options = Self.options(feed: feed, store: store, workers: 1)
        options.pipelinePath = pipeline
        let importer = Importer(spec: try PipelineSpec.load(path: pipeline), options: options)
        // Not on the first event: the split's end is one too (its record's save is merged
        // like any other), and it may come before the first save of records.
        importer.addProgressObserver { event in if event.recordsThisRun > 0 { importer.cancel() } }
        #expect(throws: ImportInterrupted.self) { try importer.run() }
        #expect(importer.isCancelled)
        let stopped = try ImportStatus.read(store: store)
        #expect(stopped.unfinishedRun?.number == 1 && !stopped.finished)
        #expect(stopped.recordsDone > 0 && stopped.recordsDone < 400)
        let resumed = try Importer(resuming: Importer.Options(store: store, workers: 2)).run()
        #expect(resumed.run == 1 && resumed.records == 400)
        #expect(resumed.imported + resumed.rejectedThisRun == 400 - stopped.recordsDone)
        let status = try ImportStatus.read(store: store)
        #expect(status.finished && status.runs.count == 1 && status.recordsDone == 400 && status.rejected == 8)
        #expect(status.counts["Post"] == 300 - 6, "300 keys, 6 of which only in rejected records")
    }
}

@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct UnifiedImporterPostgresTests {
    @Test(.timeLimit(.minutes(10)))
    func theSameImporterImportsAFeedIntoSQLiteAndPostgreSQLWithEqualReportsAndRows() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try UnifiedImporterTests.feed(dir)
        let sqliteStore = dir.file("store.sqlite")
        let events = Mutex<[ImportProgress]>([])
        var reports: [ImportReport] = []
        for store in [sqliteStore, server.url] {
            let importer = try Importer(pipeline: UnifiedImporterTests.pipeline, options: UnifiedImporterTests.options(feed: feed, store: store))
            if store == server.url { importer.addProgressObserver { event in events.withLock { $0.append(event) } } }
            reports.append(try importer.run())
        }
        let (sqlite, postgres) = (reports[0], reports[1])
        #expect(postgres.records == sqlite.records && sqlite.records == 400)
        #expect(postgres.imported == sqlite.imported && postgres.rejectedThisRun == sqlite.rejectedThisRun && sqlite.rejectedThisRun == 8)
        #expect(postgres.rejected == sqlite.rejected)
        #expect(postgres.outcomes == sqlite.outcomes && sqlite.outcomes?.updated == 100 - 2, "\(String(describing: sqlite.outcomes))")
        #expect(postgres.run == 1 && sqlite.run == 1)
        #expect(postgres.runFinished == true && postgres.stopped == false && postgres.process?.isEmpty == false)
        #expect(sqlite.runFinished == nil && sqlite.process == nil, "PostgreSQL's fields stay out of a SQLite report")
        let spec = try PipelineSpec.parse(UnifiedImporterTests.pipeline)
        #expect(try PostgresImportTests.postgresRows(server.url, spec.model) == PostgresImportTests.sqliteRows(sqliteStore, spec.model))
        let seen = events.withLock { $0 }
        #expect(seen.count > 1 && seen.last?.isFinal == true && seen.dropLast().allSatisfy { !$0.isFinal })
        #expect(seen.last?.recordsThisRun == 400)
    }

    @Test(.timeLimit(.minutes(10)))
    func aCancelledPostgreSQLImportIsJoinedThroughImporterAndEndsAsOnSQLite() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try UnifiedImporterTests.feed(dir)
        let first = try Importer(pipeline: UnifiedImporterTests.pipeline, options: UnifiedImporterTests.options(feed: feed, store: server.url, workers: 1))
        first.addProgressObserver { _ in first.cancel() }
        let stopped = try first.run()
        #expect(first.isCancelled && stopped.stopped == true && stopped.runFinished == false)
        #expect(stopped.imported + stopped.rejectedThisRun < 400)
        let during = try ImportStatus.read(store: server.url)
        #expect(during.runs.count == 1 && during.runs.first?.state == "running" && !during.finished)
        #expect(during.runs.first?.liveProcesses == 0, "the stopped process imports it no more")
        #expect(during.processes.first?.state == "stopped")

        let joined = try Importer(joining: nil, options: Importer.Options(store: server.url, workers: 2)).run()
        #expect(joined.run == 1 && joined.runFinished == true && joined.stopped == false)
        #expect(joined.records == 400 && joined.rejected == 8)
        #expect(stopped.imported + stopped.rejectedThisRun + joined.imported + joined.rejectedThisRun == 400,
                "every record once, by one process or the other")

        _ = try Importer(pipeline: UnifiedImporterTests.pipeline, options: UnifiedImporterTests.options(feed: feed, store: dir.file("store.sqlite"))).run()
        let spec = try PipelineSpec.parse(UnifiedImporterTests.pipeline)
        #expect(try PostgresImportTests.postgresRows(server.url, spec.model) == PostgresImportTests.sqliteRows(dir.file("store.sqlite"), spec.model))
        let nothingLeft = #expect(throws: ImportError.self) { try Importer(joining: nil, options: .init(store: server.url)).run() }
        #expect(nothingLeft?.kind == .noImport(store: try PostgresURL(server.url).description))
    }

    @Test(.timeLimit(.minutes(10)))
    func importStatusReadsBothBackendsAlike() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try UnifiedImporterTests.feed(dir)
        #expect(throws: PostgresError.self, "a database no import ran in is no store yet") { try ImportStatus.read(store: server.url) }
        var statuses: [ImportStatus] = []
        for store in [dir.file("store.sqlite"), server.url] {
            _ = try Importer(pipeline: UnifiedImporterTests.pipeline, options: UnifiedImporterTests.options(feed: feed, store: store)).run()
            statuses.append(try ImportStatus.read(store: store))
            #expect(try ImportStatus.check(store: store) == [])
        }
        let (sqlite, postgres) = (statuses[0], statuses[1])
        #expect(postgres.finished && sqlite.finished)
        #expect(postgres.counts == sqlite.counts)
        #expect(postgres.runs.map(\.number) == [1] && sqlite.runs.map(\.number) == [1])
        #expect(postgres.latest.state == "finished" && sqlite.latest.state == "finished")
        #expect(postgres.recordsDone == 400 && sqlite.recordsDone == 400)
        #expect(postgres.rejected == 8 && sqlite.rejected == 8)
        #expect(postgres.chunksComplete == 20 && sqlite.chunksComplete == 20)
        #expect(postgres.chunkCount == 20 && sqlite.chunkCount == 20)
        #expect(postgres.latest.feed == sqlite.latest.feed)
        #expect(postgres.store == (try PostgresURL(server.url)).description && sqlite.store == dir.file("store.sqlite"))
        #expect(postgres.processes.count == 1 && postgres.processes.first?.state == "finished" && sqlite.processes.isEmpty)
        #expect(postgres.rejects.count == 5, "the newest run's first rejects")
    }
}
