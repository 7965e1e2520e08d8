import Foundation
import IngestJSON
import IngestPipeline
import IngestStore
#if canImport(Glibc)
import Glibc
#endif

/// `ingest bench import --store postgresql://…`: the same generated feed imported into a
/// PostgreSQL store by 1, 2 and 4 processes (`ingest import` and `ingest join`s), beside
/// psql's `\copy` of the rows Ingest wrote, into the same tables, in one run.
struct BenchPostgresImport {
    var url: PostgresURL
    var feed: String
    var bytes: Int
    var records: Int
    var pipeline: String
    var processCounts: [Int]
    var workersPerProcess: Int
    var runs: Int
    var workDirectory: String

    struct Measured {
        var name: String
        var processes: String
        var seconds: [Double] = []
        var registration: [Double] = []
        var peakRSS = 0
        var best: Double { seconds.min() ?? .nan }
    }

    /// The store for child processes: its password, if the URL has one, goes by PGPASSWORD.
    private var target: String { url.withoutPassword }

    func run() throws {
        if let password = url.password { setenv("PGPASSWORD", password, 1) }
        let me = ChildProcess.currentExecutable
        guard let psql = ChildProcess.find("psql") ?? Self.serverTool("psql") else {
            throw CommandFailure("psql not found: install postgresql-client for the \\copy reference")
        }
        let spec = try PipelineSpec.load(path: pipeline)
        Console.error("bench: \(url): drops and makes again the tables of \(spec.model.entities.map(\.name).joined(separator: ", ")) and Ingest's bookkeeping for each run\n")
        var measured = processCounts.map { Measured(name: "ingest import + join", processes: String($0)) }
        var copy = Measured(name: "psql \\copy of the same rows", processes: "1")
        for _ in 0..<runs {
            for index in measured.indices {
                try reset(spec.model)
                let count = processCounts[index]
                let started = ContinuousClock.now
                var children = [try ChildProcess.start(me, ["import", feed, "--pipeline", pipeline, "--store", target,
                                                            "--workers", String(workersPerProcess), "--quiet"])]
                // The joins start once the run is registered (split and chunks stored).
                while (try? PostgresStatus.read(url: url))?.runs.isEmpty ?? true {
                    guard (ContinuousClock.now - started).seconds < 600 else {
                        throw CommandFailure("the run was not registered within 10 minutes (is ingest import failing? run it alone to see)")
                    }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                measured[index].registration.append((ContinuousClock.now - started).seconds)
                for _ in 1..<max(1, count) {
                    children.append(try ChildProcess.start(me, ["join", target, "--workers", String(workersPerProcess), "--quiet"]))
                }
                let results = children.map { $0.wait() }
                if let failed = results.first(where: { $0.status != 0 }) {
                    throw CommandFailure("an ingest process failed with exit status \(failed.status)")
                }
                measured[index].seconds.append((ContinuousClock.now - started).seconds)
                measured[index].peakRSS = max(measured[index].peakRSS, results.map(\.peakRSSBytes).max() ?? 0)
                try checkCounts(spec.model)
            }
            copy.seconds.append(try copyTables(spec.model, psql: psql))
        }
        let copyBest = copy.best
        var rows: [[String]] = []
        for item in measured + [copy] {
            let best = item.best
            rows.append([item.name, item.processes, String(item.name.hasPrefix("ingest") ? workersPerProcess : 1), Format.count(records),
                         Format.fixed(Double(bytes) / 1e6, places: 1), Format.fixed(best, places: 2),
                         Format.count(Int(Double(records) / best)), Format.fixed(Double(bytes) / 1e6 / best, places: 1),
                         item.registration.isEmpty ? "-" : Format.fixed(item.registration.min()!, places: 2),
                         item.peakRSS > 0 ? ByteCount.format(item.peakRSS) : "-",
                         Format.fixed(copyBest / best, places: 2) + "×"])
        }
        print(Table.render(header: ["command", "processes", "workers each", "records", "MB", "best s", "records/s", "MB/s",
                                    "split+upload s", "peak RSS (largest process)", "vs \\copy"], rows: rows))
        print("Best of \(runs) run(s), alternating, each into freshly made tables. ingest's time runs from starting `ingest import` "
            + "(split, chunks stored in the database) to the end of its last process; joins start once the run is registered. "
            + "\\copy loads the rows Ingest wrote (exported with \\copy … TO), with their row numbers and links already resolved, "
            + "into the same tables with the same indexes, in one psql session. vs \\copy above 1 is faster than \\copy.")
    }

    /// Drops the model's tables and Ingest's bookkeeping, for a fresh import.
    private func reset(_ model: Model) throws {
        let connection = try PostgresConnection(url)
        let tables = try connection.execute("""
            SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()
              AND (tablename LIKE '\\_ingest\\_%' OR tablename LIKE '\\_join\\_%' OR tablename = ANY($1::text[]))
            """, ["{" + model.entities.map { "\"" + $0.name.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"])
        let names = (0..<tables.count).compactMap { tables[$0, 0] }
        if !names.isEmpty { try connection.execute("DROP TABLE " + names.joined(separator: ", ") + " CASCADE") }
    }

    private func checkCounts(_ model: Model) throws {
        let status = try PostgresStatus.read(url: url)
        guard status.runs.last?.state == "finished", status.runs.last?.recordsDone == records else {
            throw CommandFailure("the import did not finish with all \(records) records: \(status.runs.last.map { "\($0.state), \($0.recordsDone) done" } ?? "no run")")
        }
    }

    /// Exports the tables Ingest filled, empties them, and times psql loading them back with \copy.
    private func copyTables(_ model: Model, psql: String) throws -> Double {
        let tables = model.entities.map { "\"" + $0.name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        var export: [String] = []
        var load: [String] = []
        for (index, table) in tables.enumerated() {
            let file = "\(workDirectory)/copy-\(index).tsv"
            export += ["-c", "\\copy \(table) TO '\(file)'"]
            load += ["-c", "\\copy \(table) FROM '\(file)'"]
        }
        guard try ChildProcess.run(psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", target] + export).status == 0 else {
            throw CommandFailure("psql could not export the tables")
        }
        let connection = try PostgresConnection(url)
        try connection.execute("TRUNCATE " + tables.joined(separator: ", "))
        let result = try ChildProcess.run(psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", target, "-c", "BEGIN"] + load + ["-c", "COMMIT"])
        guard result.status == 0 else { throw CommandFailure("psql \\copy failed with exit status \(result.status)") }
        return result.seconds
    }

    static func serverTool(_ name: String) -> String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
