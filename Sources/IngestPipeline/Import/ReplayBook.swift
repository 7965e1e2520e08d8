import Foundation
import IngestJSON
import IngestStore

/// What a replay reads of its store, by backend: its runs, rejects, replay links and pipelines.
protocol ReplayBook {
    /// The rejects file a replay reads when none is given (nil: the store's own rejects).
    var defaultRejectsFile: String? { get }
    /// The store's unfinished run, if any, and whether it replays rejects.
    func unfinishedRun() throws -> (number: Int, isReplay: Bool)?
    /// Every run's rejects: each one's place and text.
    func rejects() throws -> [Replay.Position: String]
    /// The links of run `run`, when it is a replay's.
    func links(run: Int) throws -> [Replay.Link]?
    /// The pipeline each of `runs` was imported with: a name for messages and its text.
    func pipelines(runs: [Int]) throws -> [(run: Int, name: String, text: [UInt8])]
    /// Every run's rejects as the rejects file's lines, oldest run first.
    func rejectLines() throws -> [String]
}

/// A SQLite store's runs and rejects, from its metadata (`ImportMarker`).
struct SQLiteReplayBook: ReplayBook {
    let path: String
    let coordinator: PersistentStoreCoordinator

    init(path: String) throws {
        self.path = path
        coordinator = try PersistentStoreCoordinator(existingStoreAt: path, readOnly: true)
    }

    var defaultRejectsFile: String? {
        // The file mirrors the store: gone, the store's own rejects stand for it.
        let file = path + ".rejects.ndjson"
        return FileOps.fileSize(file) != nil ? file : nil
    }

    func unfinishedRun() throws -> (number: Int, isReplay: Bool)? {
        guard let last = try ImportMarker.runs(coordinator).last, last.state == .running else { return nil }
        return (last.number, try coordinator.metadata(forKey: Replay.linksKey(run: last.number)) != nil)
    }

    func rejects() throws -> [Replay.Position: String] {
        var result: [Replay.Position: String] = [:]
        for run in try ImportMarker.runs(coordinator) {
            for reject in try ImportMarker.rejects(coordinator, ImportMarker.Keys(run: run.number)) {
                result[Replay.Position(run: run.number, chunk: reject.chunk, index: reject.index, record: reject.record)] = reject.text
            }
        }
        return result
    }

    func links(run: Int) throws -> [Replay.Link]? {
        try ImportMarker.replayLinks(coordinator, run: run)
    }

    func pipelines(runs: [Int]) throws -> [(run: Int, name: String, text: [UInt8])] {
        let recorded = try ImportMarker.runs(coordinator)
        return try runs.map { number in
            guard let pipeline = recorded.first(where: { $0.number == number })?.pipeline else {
                throw ImportError("\(path): run \(number) does not record its pipeline's path: give the pipeline to replay its records with, --pipeline FILE")
            }
            do {
                return (number, pipeline, try PipelineSpec.resolvedText(path: pipeline))
            } catch {
                throw ImportError("\(path): run \(number)'s pipeline \(pipeline) cannot be read (\(error)): give the pipeline to replay its records with, --pipeline FILE")
            }
        }
    }

    func rejectLines() throws -> [String] {
        try ImportMarker.rejectFileLines(coordinator)
    }
}

/// A PostgreSQL store's runs and rejects, from its bookkeeping tables.
struct PostgresReplayBook: ReplayBook {
    let url: PostgresURL
    let connection: PostgresConnection
    /// Whether an import has made the bookkeeping tables (a new database has none).
    let hasRuns: Bool

    init(url: PostgresURL) throws {
        self.url = url
        connection = try PostgresConnection(url)
        hasRuns = try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t"
    }

    var defaultRejectsFile: String? { nil }

    func unfinishedRun() throws -> (number: Int, isReplay: Bool)? {
        guard hasRuns else { return nil }
        let rows = try connection.execute("SELECT run FROM _ingest_runs WHERE state = 'running' ORDER BY run DESC LIMIT 1")
        guard rows.count == 1 else { return nil }
        let run = try rows.int(0, 0)
        return (run, try links(run: run) != nil)
    }

    /// Every reject, with its run.
    private func stored() throws -> [(run: Int, reject: ImportMarker.Reject)] {
        guard hasRuns else { return [] }
        let rows = try connection.execute("SELECT run, record FROM _ingest_rejects ORDER BY run, chunk, index")
        let decoder = JSONDecoder()
        return try (0..<rows.count).map { row in
            let run = try rows.int(row, 0)
            guard let reject = try? decoder.decode(ImportMarker.Reject.self, from: Data(try rows.text(row, 1).utf8)) else {
                throw PostgresError.server("a reject of run \(run) in _ingest_rejects is damaged (not the JSON Ingest wrote)", sqlState: .dataCorrupted)
            }
            return (run, reject)
        }
    }

    func rejects() throws -> [Replay.Position: String] {
        var result: [Replay.Position: String] = [:]
        for (run, reject) in try stored() {
            result[Replay.Position(run: run, chunk: reject.chunk, index: reject.index, record: reject.record)] = reject.text
        }
        return result
    }

    func links(run: Int) throws -> [Replay.Link]? {
        guard hasRuns else { return nil }
        let rows = try connection.execute("SELECT value FROM \"_ingest_metadata\" WHERE key = $1", [Replay.linksKey(run: run)])
        guard rows.count == 1 else { return nil }
        guard let links = try? JSONDecoder().decode([Replay.Link].self, from: Data(try rows.text(0, 0).utf8)) else {
            throw PostgresError.server("the replay links of run \(run) in _ingest_metadata are damaged (not the JSON Ingest wrote)", sqlState: .dataCorrupted)
        }
        return links
    }

    func pipelines(runs: [Int]) throws -> [(run: Int, name: String, text: [UInt8])] {
        try runs.map { run in
            guard let (_, record) = try PostgresImport.record(of: run, connection) else {
                throw ImportError("\(url): run \(run) is not recorded in _ingest_runs")
            }
            return (run, "the pipeline run \(run) stored", Array(record.pipeline.utf8))
        }
    }

    func rejectLines() throws -> [String] {
        var links: [Int: [Replay.Link]] = [:]
        return try stored().map { run, reject in
            if links[run] == nil { links[run] = try self.links(run: run) ?? [] }
            return rejectFileLine(run: run, reject, origin: links[run]!.origin(of: reject.record))
        }
    }
}

extension Array where Element == Replay.Link {
    /// Where the replay's record `record` (its number in the replay's feed) first came from.
    func origin(of record: Int) -> Replay.Position? {
        indices.contains(record) ? self[record].origin : nil
    }
}
