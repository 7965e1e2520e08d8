import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// History across processes: an importer in one process, a viewer or a consumer in this
/// one that follows the store through its history alone. Not serialized: each test has a
/// store of its own, and run one after another these tests were the quick suite's last
/// 60–100 seconds, with a core idle (Performance, "The tests' build and the suite's tail").
@Suite struct HistoryImportTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
        static let available: [Backend] = PostgresServer.isAvailable ? [.sqlite, .postgres] : [.sqlite]
    }

    /// Reported as skipped, with the reason, where no PostgreSQL server can start: the
    /// tests taking a `Backend` then ran on SQLite only.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func theProcessTestsRunOnPostgreSQLToo() {
        #expect(Backend.available == [.sqlite, .postgres])
    }

    /// A store to import into: a SQLite file, or a database on a server of the test's own.
    struct Store {
        let directory: TemporaryDirectory
        let server: PostgresServer?
        var target: String { server?.url ?? directory.file("store.sqlite") }

        init(_ backend: Backend) throws {
            directory = try TemporaryDirectory()
            server = backend == .postgres ? try PostgresServer.database() : nil
        }

        /// The store once the importer has made it.
        func open(readOnly: Bool = true) throws -> PersistentStoreCoordinator {
            let deadline = Date.now.addingTimeInterval(60)
            while true {
                do {
                    let coordinator = try PersistentStoreCoordinator(existingStoreAt: target, readOnly: readOnly)
                    _ = try coordinator.currentHistoryToken()
                    return coordinator
                } catch where Date.now < deadline {
                    usleep(20_000)
                }
            }
        }
    }

    /// Each entity's rows as history's inserts name them (every one, repeats kept) and as the store holds them.
    static func insertsAndRows(_ coordinator: PersistentStoreCoordinator) throws -> (inserted: [String: [Int64]], stored: [String: [Int64]]) {
        var inserted: [String: [Int64]] = [:]
        var token: HistoryToken?
        while true {
            let fetch = try coordinator.fetchHistory(after: token, limit: 500)
            for change in fetch.changes where change.kind == .insert { inserted[change.entity, default: []].append(change.objectID.primaryKey!) }
            token = fetch.token
            if fetch.transactions.isEmpty { break }
        }
        let context = ObjectContext(coordinator: coordinator, name: "check")
        var stored: [String: [Int64]] = [:]
        try context.performAndWait {
            for entity in ["Photo", "Photographer"] {
                stored[entity] = try context.fetch(entity).map { $0.objectID.primaryKey! }.sorted()
            }
        }
        // An entity with no rows yet has no inserts either (a kill before the first save).
        return (inserted.mapValues { $0.sorted() }, stored.filter { !$0.value.isEmpty })
    }

    static func importArguments(_ feed: String, _ store: Store, workers: Int = 2) -> [String] {
        ["import", feed, "--pipeline", photos, "--store", store.target, "--workers", "\(workers)", "--save-every", "200",
         "--chunk-size", "1000", "--quiet"] + (store.server == nil ? [] : ["--lease-seconds", "2"])
    }

    /// Process A imports (on PostgreSQL with a second process joined); this process's main
    /// context and a fetched results controller on it follow through the history stream
    /// alone, and end equal to a fresh fetch.
    @MainActor
    @Test(arguments: Backend.available) func aViewerProcessFollowsAnImporterThroughHistoryAlone(backend: Backend) async throws {
        let store = try Store(backend)
        let feed = store.directory.file("feed.json")
        try FeedGenerator(records: 20_000, seed: 5).write(to: feed)
        let importer = try IngestBinary.start(Self.importArguments(feed, store))
        let coordinator = try store.open()
        var joined: IngestBinary.Running?
        if store.server != nil { joined = try IngestBinary.start(["join", store.target, "--quiet"]) }

        let viewer = ObjectContext(.main, coordinator: coordinator, name: "viewer")
        let request = FetchRequest("Photographer", sortDescriptors: [FetchSortDescriptor("name"), FetchSortDescriptor("id")])
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            let controller = try FetchedResultsController(request: request, context: viewer)
            try controller.performFetch()
            return controller
        }
        var merged: HistoryToken?
        let follower = Task { @MainActor in
            for try await transaction in coordinator.history(after: nil, interval: .milliseconds(20)) {
                viewer.performAndWait { viewer.mergeChanges(fromHistory: [transaction]) }
                merged = transaction.token
            }
        }
        // Waited for off the main thread, which the follower needs.
        let processes = SendableBox([importer] + (joined.map { [$0] } ?? []))
        let outcomes = await Self.offThePool { processes.value.map(IngestBinary.finish) }
        #expect(outcomes.allSatisfy { $0.status == 0 }, "\(outcomes.map(\.stderr))")
        // Caught up: nothing after the last transaction merged.
        while try merged.map({ try coordinator.fetchHistory(after: $0).transactions.isEmpty }) != true {
            try await Task.sleep(for: .milliseconds(20))
        }
        follower.cancel()
        try viewer.performAndWait {
            let fresh = try viewer.fetch(request)
            #expect(fresh.count > 100)
            #expect(controller.fetchedObjects.map(\.objectID) == fresh.map(\.objectID))
            #expect(controller.fetchedObjects.map { $0["name"] ?? nil } == fresh.map { $0["name"] ?? nil })
        }
        let (inserted, stored) = try Self.insertsAndRows(coordinator)
        #expect(inserted == stored)
        #expect(stored["Photo"]?.count == 20_000)
    }

    /// The importer is killed (SIGKILL) at random moments and started again: after each
    /// kill, history names exactly the rows the store holds, no more (no history of a save
    /// that did not commit) and no fewer. Up to 4 kills with `INGEST_STRESS`, 2 without.
    @Test(arguments: Backend.available) func historyOfAKilledImporterNamesExactlyWhatCommitted(backend: Backend) throws {
        let store = try Store(backend)
        let feed = store.directory.file("feed.json")
        try FeedGenerator(records: 40_000, seed: 6).write(to: feed)
        var kills = 0
        // Until an import has registered its run, the next process imports again (there is nothing to join).
        var registered = false
        for _ in 0..<Stress.count(4, quick: 2) {
            let arguments = !registered || store.server == nil ? Self.importArguments(feed, store, workers: 2) : ["join", store.target, "--quiet"]
            let running = try IngestBinary.start(arguments)
            usleep(UInt32.random(in: 150_000...600_000))
            guard running.process.isRunning else {
                let outcome = IngestBinary.finish(running)
                #expect(outcome.status == 0, "\(outcome.stderr)")
                break
            }
            kill(running.process.processIdentifier, SIGKILL)
            _ = IngestBinary.finish(running)
            kills += 1
            // Killed before it made its tables (a slow start under the whole suite's load):
            // nothing committed, so there is no history to check yet. A SQLite file may be
            // there, empty: the kill came between opening it and committing its schema.
            let opened: PersistentStoreCoordinator
            do {
                opened = try store.open()
            } catch StoreError.notAStore(_, let reason)
                where ["the database has no Ingest tables", "there is no file there", "it has no Ingest model in its metadata"].contains(reason) {
                continue
            }
            // Joined only once a run is registered: a process killed after it made the tables but
            // before its run leaves nothing to join (a join then says so and exits 0, and the
            // store stayed empty: found under the suite's load).
            if let server = store.server {
                registered = try !PostgresStatus.read(url: try PostgresURL(server.url)).runs.isEmpty
            } else {
                registered = true
            }
            let (inserted, stored) = try Self.insertsAndRows(opened)
            #expect(inserted == stored, "after kill \(kills)")
            // A PostgreSQL process's chunks go back to the pool when its lease ends.
            if store.server != nil { sleep(3) }
        }
        #expect(kills >= 1)
        let finished = try IngestBinary.run(!registered || store.server == nil ? Self.importArguments(feed, store) : ["join", store.target, "--quiet"])
        #expect(finished.status == 0, "\(finished.stderr)")
        let (inserted, stored) = try Self.insertsAndRows(try store.open())
        #expect(inserted == stored)
        #expect(stored["Photo"]?.count == 40_000)
    }

    /// Two processes import into PostgreSQL; a consumer fetching in small pages stops and
    /// starts again from its saved token (JSON, a new coordinator) at random moments
    /// meanwhile (100 times in a feed of 80,000 records with `INGEST_STRESS`, 25 in 20,000
    /// without). It receives every change exactly once: the final store's rows, no repeats.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aConsumerRestartingDuringAMultiProcessImportGetsEveryChangeOnce() throws {
        let records = Stress.count(80_000, quick: 20_000)
        let restartsWanted = Stress.count(100, quick: 25)
        let store = try Store(.postgres)
        let feed = store.directory.file("feed.json")
        try FeedGenerator(records: records, seed: 7).write(to: feed)
        let importer = try IngestBinary.start(Self.importArguments(feed, store, workers: 1))
        var consumer = try store.open()
        let joined = try IngestBinary.start(["join", store.target, "--workers", "1", "--quiet"])
        var saved = try JSONEncoder().encode(Optional<HistoryToken>.none)
        var received: [String: [Int64]] = [:]
        var restarts = 0
        func fetchOnce() throws -> Bool {
            let token = try JSONDecoder().decode(HistoryToken?.self, from: saved)
            let fetch = try consumer.fetchHistory(after: token, limit: Int.random(in: 1...3))
            for transaction in fetch.transactions {
                for change in transaction.changes where change.kind == .insert { received[change.entity, default: []].append(change.objectID.primaryKey!) }
                saved = try JSONEncoder().encode(transaction.token)
            }
            saved = try JSONEncoder().encode(fetch.token)
            return !fetch.transactions.isEmpty
        }
        while importer.process.isRunning || joined.process.isRunning {
            _ = try fetchOnce()
            if restarts < restartsWanted {
                consumer = try PersistentStoreCoordinator(existingStoreAt: store.target, readOnly: true)
                restarts += 1
            }
            usleep(UInt32.random(in: 0...2_000))
        }
        #expect(IngestBinary.finish(importer).status == 0)
        #expect(IngestBinary.finish(joined).status == 0)
        #expect(restarts == restartsWanted, "the consumer restarted \(restarts) times while the processes imported")
        while try fetchOnce() {}
        let (_, stored) = try Self.insertsAndRows(consumer)
        #expect(received.mapValues { $0.sorted() } == stored)
        #expect(stored["Photo"]?.count == records)
    }
}

extension HistoryImportTests {
    /// Runs `body` on a thread of its own: a test's blocking wait must not hold one of the
    /// (two, here) threads every task shares.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }
}

/// Carries a value the test only touches on its context's queue out of `perform`.
struct SendableBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
