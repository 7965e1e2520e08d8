import Foundation
import IngestJSON
import IngestPipeline
import IngestService
import IngestStore
import IngestTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// `DirectoryImportService` beside another service: each feed put in the directory is
/// imported once, in name order, as one import of the same feeds would; half-written and
/// hidden files are left alone; started again, it imports nothing twice. On both stores.
@Suite struct DirectoryImportServiceTests {
    typealias Backend = ImportServiceTests.Backend

    @Test func aServiceFollowingADirectoryImportsEachNewFeedOnceIntoSQLite() async throws {
        try await Self.followsTheDirectory(on: .sqlite)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aServiceFollowingADirectoryImportsEachNewFeedOnceIntoPostgreSQL() async throws {
        try await Self.followsTheDirectory(on: .postgresql)
    }

    /// A feed of the directory whose run was stopped is continued first, as one run.
    @Test func aServiceContinuesTheStoppedRunOfAFeedInItsDirectory() async throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let store = dir.file("photos.sqlite"), incoming = dir.file("incoming")
        try FileManager.default.createDirectory(atPath: incoming, withIntermediateDirectories: true)
        try Self.deliver("a.json", records: 6_000, seed: 8, into: incoming)
        let pipeline = Array(try Data(contentsOf: URL(fileURLWithPath: ImportServiceTests.photos)))
        var options = Importer.Options(feed: incoming + "/a.json", store: store, workers: 1, saveEvery: 500, chunkSize: 1_000)
        options.pipelinePath = ImportServiceTests.photos
        // Stopped at its first save, as a shutdown would.
        let stopped = try Importer(pipeline: pipeline, options: options)
        stopped.addProgressObserver { _ in stopped.cancel() }
        #expect(throws: ImportInterrupted.self) { try stopped.run() }
        let before = try ImportStatus.read(store: store)
        #expect(before.unfinishedRun != nil && (before.counts["Photo"] ?? 0) < 6_000)

        let service = DirectoryImportService(directory: incoming, pipeline: pipeline, options: options, pollInterval: .milliseconds(100))
        let running = Task { try await service.run() }
        try await Self.until("the stopped run") { service.importedFeeds == 1 }
        running.cancel()
        try await running.value
        let after = try ImportStatus.read(store: store)
        #expect(after.runs.count == 1 && after.runs[0].state == "finished" && after.runs[0].recordsDone == 6_000)
    }

    /// Each photo of the store as "id title views", by id.
    static func photos(_ store: String) throws -> [String] {
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store))
        return try context.performAndWait {
            try context.fetch(FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])).map {
                "\($0.id ?? "nil") \($0.title ?? "nil") \($0.views ?? "nil")"
            }
        }
    }

    /// Writes a feed as a producer should: under a hidden name, then renamed into place.
    static func deliver(_ name: String, records: Int, seed: UInt64, into directory: String) throws {
        try deliver([(name, records, seed)], into: directory)
    }

    /// Delivers feeds in the order given, each written under a hidden name first and all
    /// renamed into place only then, back to back: a poll of the service between two of them
    /// would find the first alone (a fresh clone's run once saw the later name imported first
    /// when the earlier one was still being generated).
    static func deliver(_ feeds: [(name: String, records: Int, seed: UInt64)], into directory: String) throws {
        for feed in feeds {
            try FeedGenerator(records: feed.records, seed: feed.seed, repeatKeys: 2).write(to: directory + "/." + feed.name + ".part")
        }
        for feed in feeds {
            #expect(rename(directory + "/." + feed.name + ".part", directory + "/" + feed.name) == 0)
        }
    }

    /// Waits until `condition` holds (the service imports on its own schedule), or fails
    /// after twenty minutes: in the full suite on 2 cores, the tests that block the
    /// cooperative pool hold the service's loop until they end (CI runs saw these tests
    /// pass after 480–540 s of a 610 s suite, against well under a second alone).
    static func until(_ what: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(1_200)
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("waited twenty minutes for \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func followsTheDirectory(on backend: Backend) async throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = backend == .postgresql ? try PostgresServer.database() : nil
        defer { withExtendedLifetime(server) {} }
        let store = try server?.createDatabase("follow") ?? dir.file("photos.sqlite")
        let incoming = dir.file("incoming")
        try FileManager.default.createDirectory(atPath: incoming, withIntermediateDirectories: true)
        let pipeline = Array(try Data(contentsOf: URL(fileURLWithPath: ImportServiceTests.photos)))
        // Not feeds: a hidden file and a name the service does not take.
        try dir.write("incoming/.draft.json", Array("[{\"id\":\"hidden\"}]".utf8))
        try dir.write("incoming/notes.txt", Array("[{\"id\":\"notes\"}]".utf8))
        try Self.deliver("2026-11-29T10.json", records: 3_000, seed: 5, into: incoming)

        let reports = Mutex<[String]>([])
        func follower() -> DirectoryImportService {
            var options = Importer.Options(feed: "", store: store, workers: 2, saveEvery: 500, chunkSize: 1_000)
            options.pipelinePath = ImportServiceTests.photos
            return DirectoryImportService(directory: incoming, pipeline: pipeline, options: options, pollInterval: .milliseconds(100), onReport: { feed, report in
                reports.withLock { $0.append("\((feed as NSString).lastPathComponent) \(report.imported)") }
            })
        }
        let service = follower()
        let other = ImportServiceTests.OtherService()
        let group = ServiceGroup(configuration: .init(services: [.init(service: service), .init(service: other)],
                                                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        try await Self.until("the first feed") { service.importedFeeds == 1 }
        // Two more, the later name delivered first: they are imported in name order.
        try Self.deliver([("2026-11-29T12.json", 2_000, 7), ("2026-11-29T11.json", 2_500, 6)], into: incoming)
        try await Self.until("three feeds") { service.importedFeeds == 3 }
        await group.triggerGracefulShutdown()
        try await running.value
        let otherShutDown = other.shutDown.load(ordering: .relaxed)
        #expect(otherShutDown)
        #expect(reports.withLock { $0 } == ["2026-11-29T10.json 3000", "2026-11-29T11.json 2500", "2026-11-29T12.json 2000"])

        // The same feeds imported one after another by hand, into a store of their own.
        let oracle = try server?.createDatabase("oracle") ?? dir.file("oracle.sqlite")
        for name in ["2026-11-29T10.json", "2026-11-29T11.json", "2026-11-29T12.json"] {
            var options = Importer.Options(feed: incoming + "/" + name, store: oracle, workers: 1, saveEvery: 500, chunkSize: 1_000)
            options.pipelinePath = ImportServiceTests.photos
            _ = try Importer(pipeline: pipeline, options: options).run()
        }
        let status = try ImportStatus.read(store: store), expected = try ImportStatus.read(store: oracle)
        #expect(status.runs.map(\.state) == ["finished", "finished", "finished"])
        #expect(status.runs.map { ($0.feed as NSString).lastPathComponent } == ["2026-11-29T10.json", "2026-11-29T11.json", "2026-11-29T12.json"])
        #expect(status.counts == expected.counts)
        #expect(status.runs.map(\.recordsDone) == expected.runs.map(\.recordsDone))
        if backend == .sqlite { #expect(try Self.photos(store) == Self.photos(oracle)) }

        // Started again, it finds every feed imported and imports nothing.
        let again = follower()
        let rerun = Task { try await again.run() }
        try await Task.sleep(for: .milliseconds(600))
        rerun.cancel()
        try await rerun.value
        #expect(again.importedFeeds == 0)
        #expect(try ImportStatus.read(store: store).runs.count == 3)
    }
}
