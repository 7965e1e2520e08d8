import Foundation
public import IngestPipeline
public import ServiceLifecycle
import IngestJSON
import IngestStore
import Synchronization

/// Follows a directory as a service of a swift-service-lifecycle `ServiceGroup`: each feed
/// that appears in it is imported into one store with one pipeline, one run a feed, in the
/// order of their names, until the group shuts down.
///
/// A feed is taken once its size has stayed the same for one `pollInterval` (a producer
/// still writing it is waited for; writing under another name and renaming it in place is
/// better still). Names starting with a dot, and names `accepts` refuses (by default, all
/// but `.json`, `.ndjson`, `.jsonl`, each possibly `.gz`), are never taken. What was
/// imported is read from the store, not kept aside: a feed whose run the store records as
/// finished (or abandoned) is not imported again, and a feed whose run is unfinished is
/// continued first, so restarting the service (or the machine) goes on where it stopped.
/// A graceful shutdown stops the import under way at a save boundary; the next start
/// continues it. A feed that fails (malformed, say) ends the service with its error, its
/// run kept: fix or remove the feed and start again (a feed removed from the directory
/// leaves its unfinished run abandoned, its records kept, when the next feed is imported).
///
/// ```swift
/// let follower = DirectoryImportService(directory: "/srv/incoming", pipeline: pipelineBytes,
///                                       options: .init(feed: "", store: "photos.sqlite", workers: 2),
///                                       onReport: { feed, report in logger.info("imported \(feed): \(report.imported) records") })
/// let group = ServiceGroup(configuration: .init(services: [.init(service: follower), .init(service: httpServer)],
///                                               gracefulShutdownSignals: [.sigterm], logger: logger))
/// try await group.run()
/// ```
public final class DirectoryImportService: Service, Sendable {
    private let directory: String
    private let pipeline: [UInt8]
    private let options: Importer.Options
    private let pollInterval: Duration
    private let accepts: @Sendable (String) -> Bool
    private let onReport: @Sendable (String, ImportReport) -> Void
    /// Each candidate's size when it was last seen: taken when it has not changed since.
    private let sizes = Mutex<[String: Int]>([:])
    private let imported = Atomic<Int>(0)

    /// The feed names a directory service takes by default.
    public static let feedSuffixes = [".json", ".ndjson", ".jsonl"].flatMap { [$0, $0 + ".gz"] }

    /// - Parameters:
    ///   - directory: the directory to follow.
    ///   - pipeline: the pipeline file's bytes (a PostgreSQL run stores them).
    ///   - options: the imports' options; `feed` is not read (each feed found is), and
    ///     `pipelinePath`, when given, is what a SQLite run records for `ingest resume`.
    ///   - pollInterval: how often the directory is looked at.
    ///   - accepts: whether a file name is a feed to take.
    ///   - onReport: called with each feed's path and report when its import ends.
    public init(directory: String, pipeline: [UInt8], options: Importer.Options, pollInterval: Duration = .seconds(2),
                accepts: @escaping @Sendable (String) -> Bool = { name in DirectoryImportService.feedSuffixes.contains { name.hasSuffix($0) } },
                onReport: @escaping @Sendable (String, ImportReport) -> Void = { _, _ in }) {
        self.directory = directory
        self.pipeline = pipeline
        self.options = options
        self.pollInterval = pollInterval
        self.accepts = accepts
        self.onReport = onReport
    }

    /// Feeds imported to their end by this service so far.
    public var importedFeeds: Int { imported.load(ordering: .relaxed) }

    /// Follows the directory until a graceful shutdown or the cancellation of its task
    /// (then it returns without an error, the import under way stopped at a save).
    /// - Throws: `ImportError` when the directory cannot be read; what `Importer.run()`
    ///   throws for a feed (the service ends there).
    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if let (feed, abandoning) = try nextFeed() {
                var options = options
                options.feed = feed
                options.abandonRun = abandoning
                switch try await ImportService.run(try Importer(pipeline: pipeline, options: options)) {
                case .finished(let report):
                    imported.add(1, ordering: .relaxed)
                    onReport(feed, report)
                case .stopped(let report):
                    if let report { onReport(feed, report) }
                    return
                }
                continue
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: self.pollInterval) }
            } catch {
                return
            }
        }
    }

    /// The next feed to import, and whether its import abandons the store's unfinished run
    /// (whose feed is no longer in the directory); nil when none is ready.
    private func nextFeed() throws -> (String, abandoning: Bool)? {
        let runs = try storeRuns()
        let candidates = try feedsInDirectory()
        let unfinished = runs.last { $0.state == "running" }
        // A stopped run of a feed still here goes first: importing the feed again continues it.
        if let unfinished, candidates.contains(where: { $0.path == unfinished.feed }) { return (unfinished.feed, false) }
        let done = Set(runs.map(\.feed))
        let ready = sizes.withLock { sizes in
            var ready: [String] = []
            var seen: [String: Int] = [:]
            for (path, size) in candidates where !done.contains(path) {
                if sizes[path] == size { ready.append(path) }
                seen[path] = size
            }
            sizes = seen
            return ready
        }
        guard let next = ready.min() else { return nil }
        if let unfinished {
            // Only a run of this directory's own feeds is the service's to abandon.
            let here = URL(fileURLWithPath: directory).standardizedFileURL.path + "/"
            guard unfinished.feed.hasPrefix(here) else {
                throw ImportError("\(options.store): run \(unfinished.number) of \(unfinished.feed), a feed not in \(directory), has not finished: finish it (ingest resume) before following the directory")
            }
        }
        return (next, unfinished != nil)
    }

    /// The regular files of the directory that `accepts` takes, with their sizes and
    /// paths as runs record them.
    private func feedsInDirectory() throws -> [(path: String, size: Int)] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ImportError("\(directory): the directory to follow cannot be read (\(error.localizedDescription))")
        }
        let base = URL(fileURLWithPath: directory).standardizedFileURL
        return names.filter { !$0.hasPrefix(".") && accepts($0) }.compactMap { name in
            let path = base.appendingPathComponent(name).standardizedFileURL.path
            return FileOps.fileSize(path).map { (path, $0) }
        }
    }

    /// The store's runs: none while it has none (a new file or database).
    private func storeRuns() throws -> [ImportStatus.Run] {
        if !options.isPostgres, FileOps.fileSize(options.store).map({ $0 > 0 }) != true { return [] }
        do {
            return try ImportStatus.read(store: options.store).runs
        } catch let error as ImportError where error.kind == .noImport(store: options.store) {
            return []
        } catch PostgresError.notAStore {
            return []
        }
    }
}
