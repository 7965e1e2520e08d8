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

/// `ImportService` in a `ServiceGroup` beside another service: a graceful shutdown stops
/// the import at a save boundary and the other service with it, the same import run again
/// finishes the run, and a cancelled task stops it as `cancel()` does; on both stores.
@Suite struct ImportServiceTests {
    static let photos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Pipelines/photos.json").path
    static let records = 30_000

    /// Stands for the application's own service (an HTTP server): runs until the group shuts down.
    final class OtherService: Service, Sendable {
        let shutDown = Atomic<Bool>(false)
        func run() async throws {
            try await gracefulShutdown()
            shutDown.store(true, ordering: .relaxed)
        }
    }

    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgresql
        var testDescription: String { rawValue }
        static var available: [Backend] { PostgresServer.isAvailable ? allCases : [.sqlite] }
    }

    static func importer(feed: String, store: String) throws -> Importer {
        var options = Importer.Options(feed: feed, store: store, workers: 2, saveEvery: 500, chunkSize: 2_000)
        options.again = false
        return try Importer(pipeline: Array(try Data(contentsOf: URL(fileURLWithPath: photos))), options: options)
    }

    static func photoCount(_ store: String) throws -> Int {
        try ImportStatus.read(store: store).counts["Photo"] ?? 0
    }

    @Test(arguments: Backend.available) func aGracefulShutdownStopsTheImportAtASaveAndRunningItAgainFinishesTheRun(backend: Backend) async throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = backend == .postgresql ? try PostgresServer() : nil
        defer { withExtendedLifetime(server) {} }
        let store = try server?.createDatabase("service") ?? dir.file("photos.sqlite")
        let feed = dir.file("feed.json")
        try FeedGenerator(records: Self.records, seed: 3).write(to: feed)

        let importer = try Self.importer(feed: feed, store: store)
        let service = ImportService(importer)
        let other = OtherService()
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup), .init(service: other)],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let asked = Atomic<Bool>(false)
        _ = importer.addProgressObserver { progress in
            guard progress.recordsThisRun >= 2_000, !asked.exchange(true, ordering: .relaxed) else { return }
            Task { await group.triggerGracefulShutdown() }
        }
        try await group.run()
        let (wasAsked, otherShutDown) = (asked.load(ordering: .relaxed), other.shutDown.load(ordering: .relaxed))
        #expect(wasAsked, "the run ended before the shutdown was asked")
        #expect(otherShutDown)
        guard case .stopped = try #require(service.outcome) else {
            Issue.record("the import was not stopped: \(String(describing: service.outcome))")
            return
        }
        let saved = try Self.photoCount(store)
        #expect(saved > 0 && saved < Self.records, "\(saved)")

        // The same import again, alone: it continues the run and ends it.
        let reported = Mutex<ImportReport?>(nil)
        let again = ImportService(try Self.importer(feed: feed, store: store)) { report in reported.withLock { $0 = report } }
        try await again.run()
        guard case .finished = try #require(again.outcome) else {
            Issue.record("the second run did not finish: \(String(describing: again.outcome))")
            return
        }
        #expect(try Self.photoCount(store) == Self.records)
        #expect(reported.withLock { $0 } != nil)
    }

    @Test func cancellingTheTaskThatRunsTheServiceStopsTheImportAtASave() async throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let store = dir.file("photos.sqlite"), feed = dir.file("feed.json")
        try FeedGenerator(records: Self.records, seed: 4).write(to: feed)
        let importer = try Self.importer(feed: feed, store: store)
        let service = ImportService(importer)
        let started = AsyncStream<Void>.makeStream()
        let asked = Atomic<Bool>(false)
        _ = importer.addProgressObserver { progress in
            if progress.recordsThisRun >= 2_000, !asked.exchange(true, ordering: .relaxed) { started.continuation.yield() }
        }
        let task = Task { try await service.run() }
        for await _ in started.stream { break }
        task.cancel()
        try await task.value
        guard case .stopped = try #require(service.outcome) else {
            Issue.record("the import was not stopped: \(String(describing: service.outcome))")
            return
        }
        let saved = try Self.photoCount(store)
        #expect(saved > 0 && saved < Self.records, "\(saved)")
        #expect(try ImportStatus.read(store: store).unfinishedRun != nil, "the run is left resumable")
    }
}
