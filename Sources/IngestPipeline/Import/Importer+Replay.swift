import Foundation
import IngestJSON
import IngestStore
#if canImport(Glibc)
import Glibc
#endif

extension Importer {
    /// An importer of `replay`'s records as a new run of `options.store` (`options.feed` and
    /// `options.pipelinePath` are not read). The records become an NDJSON feed, one a line,
    /// written beside a SQLite store as `STORE.replay-XXXXXX.ndjson` with the pipeline that
    /// imports them (`STORE.replay-XXXXXX.pipeline.json`: `ingest resume` reads both), or for
    /// PostgreSQL in the temporary directory; they are removed when the run finishes, or
    /// when it fails before the store recorded it. The run records each record's link to the
    /// reject it replays (`Replay.Link`), and its finish removes those rejects.
    /// - Throws: `IOError` when the files cannot be written; `PipelineError`.
    public convenience init(replaying replay: Replay, options: Options) throws {
        var options = options
        let postgres = options.isPostgres
        let prefix = postgres ? FileManager.default.temporaryDirectory.appendingPathComponent("ingest-replay-").path : options.store + ".replay-"
        let feed = try FileOps.createUnique(replay.feedBytes, prefix: prefix, suffix: Self.replayFeedSuffix)
        if !postgres {
            let pipeline = String(feed.dropLast(Self.replayFeedSuffix.count)) + Self.replayPipelineSuffix
            do {
                try FileOps.createNew(replay.pipeline, at: pipeline)
            } catch {
                _ = unlink(feed)
                throw error
            }
            options.pipelinePath = pipeline
        }
        options.feed = feed
        options.replay = replay.records.map(\.link)
        // The same texts replayed again are new attempts, not a feed imported twice.
        options.again = true
        try self.init(pipeline: replay.pipeline, options: options)
    }

    static let replayFeedSuffix = ".ndjson"
    static let replayPipelineSuffix = ".pipeline.json"

    /// Removes a replay's feed and pipeline files: only regular files of the names
    /// `init(replaying:options:)` gives them (a run's feed of any other name is the user's).
    static func removeReplayFiles(feed: String, pipeline: String?) {
        for (path, suffix) in [(feed, replayFeedSuffix), (pipeline, replayPipelineSuffix)] {
            guard let path else { continue }
            let name = (path as NSString).lastPathComponent
            guard name.hasSuffix(suffix), name.contains(".replay-") || name.hasPrefix("ingest-replay-"), FileOps.isRegularFile(path) else { continue }
            _ = unlink(path)
        }
    }

    /// After a replay's `run()` failed: its files go unless the store recorded a run of them
    /// (that run's resume reads them). Kept when the store cannot be asked.
    @_optimize(none)
    func removeReplayFilesUnlessRecorded() {
        guard options.replay != nil else { return }
        let feed = Self.absolute(options.feed)
        let recorded: Bool
        if isPostgres {
            guard let url = try? PostgresURL(options.store), let connection = try? PostgresConnection(url),
                  let hasRuns = try? connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else { return }
            guard hasRuns else { return Self.removeReplayFiles(feed: options.feed, pipeline: nil) }
            guard let rows = try? connection.execute("SELECT 1 FROM _ingest_runs WHERE record::json->>'feed' = $1", [feed]) else { return }
            recorded = rows.count > 0
        } else if FileOps.fileSize(options.store).map({ $0 > 0 }) != true {
            recorded = false
        } else {
            guard let store = try? PersistentStoreCoordinator(existingStoreAt: options.store),
                  let runs = try? ImportMarker.runs(store) else { return }
            recorded = runs.contains { $0.feed == feed }
        }
        if !recorded { Self.removeReplayFiles(feed: options.feed, pipeline: options.pipelinePath) }
    }
}
