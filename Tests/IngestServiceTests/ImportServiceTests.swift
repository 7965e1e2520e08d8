import CoreMetrics
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
    }

    /// Holds every save once `limit` records were imported, until the importer is
    /// cancelled (or 5 minutes pass): the run cannot end before the test's stop reaches it,
    /// however long a loaded machine takes to deliver it. Fed by the run's own metrics.
    final class SaveGate: MetricsFactory, CounterHandler, Sendable {
        let imported = Atomic<Int64>(0)
        let reached = Atomic<Bool>(false)
        let limit: Int64
        let importer = Mutex<Importer?>(nil)

        init(limit: Int64) { self.limit = limit }

        var isReached: Bool { reached.load(ordering: .acquiring) }

        func increment(by amount: Int64) {
            guard imported.add(amount, ordering: .relaxed).newValue >= limit else { return }
            reached.store(true, ordering: .releasing)
            let deadline = Date().addingTimeInterval(300)
            while importer.withLock({ $0?.isCancelled }) != true && Date() < deadline { usleep(5_000) }
        }
        func reset() {}

        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
            label == "ingest_records_total" && dimensions.contains { $0 == ("outcome", "imported") } ? self : NOOPMetricsHandler.instance
        }
        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { NOOPMetricsHandler.instance }
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
        func destroyCounter(_ handler: any CounterHandler) {}
        func destroyRecorder(_ handler: any RecorderHandler) {}
        func destroyTimer(_ handler: any TimerHandler) {}
    }

    static func importer(feed: String, store: String, gate: SaveGate? = nil) throws -> Importer {
        var options = Importer.Options(feed: feed, store: store, workers: 2, saveEvery: 500, chunkSize: 2_000)
        options.metrics = gate
        let importer = try Importer(pipeline: Array(try Data(contentsOf: URL(fileURLWithPath: photos))), options: options)
        gate?.importer.withLock { $0 = importer }
        return importer
    }

    /// Waits (off the cooperative pool's hands: it sleeps) until `gate` holds the run.
    static func untilHeld(_ gate: SaveGate) async throws {
        while !gate.isReached { try await Task.sleep(for: .milliseconds(10)) }
    }

    static func photoCount(_ store: String) throws -> Int {
        try ImportStatus.read(store: store).counts["Photo"] ?? 0
    }

    @Test func aGracefulShutdownStopsASQLiteImportAtASaveAndRunningItAgainFinishesTheRun() async throws {
        try await Self.shutdownStopsAndRunningAgainFinishes(on: .sqlite)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aGracefulShutdownStopsAPostgreSQLImportAtASaveAndRunningItAgainFinishesTheRun() async throws {
        try await Self.shutdownStopsAndRunningAgainFinishes(on: .postgresql)
    }

    static func shutdownStopsAndRunningAgainFinishes(on backend: Backend) async throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = backend == .postgresql ? try PostgresServer.database() : nil
        defer { withExtendedLifetime(server) {} }
        let store = try server?.createDatabase("service") ?? dir.file("photos.sqlite")
        let feed = dir.file("feed.json")
        try FeedGenerator(records: Self.records, seed: 3).write(to: feed)

        let gate = SaveGate(limit: 2_000)
        let importer = try Self.importer(feed: feed, store: store, gate: gate)
        let service = ImportService(importer)
        let other = OtherService()
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup), .init(service: other)],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let stopper = Task {
            try await Self.untilHeld(gate)
            await group.triggerGracefulShutdown()
        }
        try await group.run()
        try await stopper.value
        let otherShutDown = other.shutDown.load(ordering: .relaxed)
        #expect(otherShutDown, "the other service was shut down with the import")
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
        let gate = SaveGate(limit: 2_000)
        let service = ImportService(try Self.importer(feed: feed, store: store, gate: gate))
        let task = Task { try await service.run() }
        try await Self.untilHeld(gate)
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
