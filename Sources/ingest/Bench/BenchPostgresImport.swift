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
    /// The joined processes read every chunk from the database (`join --from-database`), as
    /// on machines that cannot see the importing process's chunk files.
    var joinsFromDatabase = false
    var runs: Int
    var workDirectory: String

    struct Measured {
        var name: String
        var processes: String
        var seconds: [Double] = []
        var registration: [Double] = []
        /// Per run: the ingest processes' (or psql's) CPU seconds, and the server's.
        var clientCPU: [Double] = []
        var serverCPU: [Double?] = []
        /// Per run: the second import's seconds (the feed again, 10% of its records changed).
        var again: [Double] = []
        var peakRSS = 0
        /// The pipeline file it imports with (history off: a copy; nil: the bench's).
        var pipeline: String?
        var best: Double { seconds.min() ?? .nan }
        var bestIndex: Int { seconds.indices.min { seconds[$0] < seconds[$1] } ?? 0 }
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
        let changed = try changedFeed()
        let server = ServerCPU(url: url)
        Console.error("bench: \(url): drops and makes again the tables of \(spec.model.entities.map(\.name).joined(separator: ", ")) and Ingest's bookkeeping for each run\n")
        if server == nil { Console.error("bench: the server's CPU is read from /proc where it runs on this machine; it does not here, so its column is empty\n") }
        var measured = processCounts.map { Measured(name: "ingest import + join" + (joinsFromDatabase ? " --from-database" : ""), processes: String($0)) }
        // History's cost: the same import with history off, with the first process count.
        measured.append(Measured(name: "ingest, history off", processes: String(processCounts[0]),
                                 pipeline: try BenchPipeline.withoutHistory(pipeline, in: workDirectory)))
        var copy = Measured(name: "psql \\copy of the same rows", processes: "1")
        for _ in 0..<runs {
            for index in measured.indices {
                try reset(spec.model)
                let count = Int(measured[index].processes)!
                let serverBefore = server?.seconds()
                let first = try importProcesses(me, feed: feed, count: count, measuring: &measured[index])
                measured[index].seconds.append(first.seconds)
                measured[index].clientCPU.append(first.cpu)
                measured[index].serverCPU.append(server.flatMap { reading in serverBefore.map { reading.seconds() - $0 } })
                try checkCounts(run: 1)
                // The same feed again with a tenth of its records changed: the update rules at work.
                var ignored = Measured(name: "", processes: "", pipeline: measured[index].pipeline)
                measured[index].again.append(try importProcesses(me, feed: changed, count: count, measuring: &ignored).seconds)
                try checkCounts(run: 2)
            }
            try reset(spec.model)
            _ = try importProcesses(me, feed: feed, count: 1, measuring: &copy)
            let serverBefore = server?.seconds()
            let loaded = try copyTables(spec.model, psql: psql)
            copy.seconds.append(loaded.seconds)
            copy.clientCPU.append(loaded.cpuSeconds)
            copy.serverCPU.append(server.flatMap { reading in serverBefore.map { reading.seconds() - $0 } })
            copy.registration.removeAll()
            copy.peakRSS = 0
        }
        let copyBest = copy.best
        let copyCPU = cpuPerRecord(copy)
        var rows: [[String]] = []
        for item in measured + [copy] {
            let best = item.best
            let cpu = cpuPerRecord(item)
            rows.append([item.name, item.processes, String(item.name.hasPrefix("ingest") ? workersPerProcess : 1), Format.count(records),
                         Format.fixed(best, places: 2), Format.count(Int(Double(records) / best)),
                         Format.fixed(copyBest / best, places: 2) + "×",
                         Format.fixed(cpu.client, places: 1), cpu.server.map { Format.fixed($0, places: 1) } ?? "-",
                         cpu.server.flatMap { server in copyCPU.server.map { (cpu.client + server) / (copyCPU.client + $0) } }.map { Format.fixed($0, places: 2) + "×" } ?? "-",
                         item.again.isEmpty ? "-" : Format.count(Int(Double(records) / item.again.min()!)),
                         item.registration.isEmpty ? "-" : Format.fixed(item.registration.min()!, places: 2),
                         item.peakRSS > 0 ? ByteCount.format(item.peakRSS) : "-"])
        }
        print(Table.render(header: ["command", "processes", "workers each", "records", "best s", "records/s", "vs \\copy",
                                    "client CPU µs/record", "server CPU µs/record", "CPU ×\\copy", "again, 10% changed: records/s",
                                    "split+upload s", "peak RSS (largest process)"], rows: rows))
        print("Best of \(runs) run(s), alternating, each into freshly made tables. ingest's time runs from starting `ingest import` "
            + "(split, chunks stored in the database) to the end of its last process; joins start once the run is registered. "
            + "\\copy loads the rows Ingest wrote (exported with \\copy … TO), with their row numbers and links already resolved, "
            + "into the same tables with the same indexes, in one psql session. vs \\copy above 1 is faster than \\copy. "
            + "CPU per record: user + system seconds of the ingest processes (or psql) and of the server's processes "
            + "(read from /proc, where the server runs on this machine), per record; CPU ×\\copy is their sum over \\copy's. "
            + "Again: the same feed imported once more into the filled store with 10% of its records' titles changed "
            + "(the update rule applies; the rest are unchanged). History off: the same import with the pipeline's "
            + "\"import\": {\"history\": false}; history on by default.")
        if let on = measured.first, let off = measured.last, off.pipeline != nil {
            print("history on vs off, \(on.processes) process(es): \(Format.count(Int(Double(records) / on.best))) vs "
                + "\(Format.count(Int(Double(records) / off.best))) records/s (\(Format.fixed(off.best / on.best, places: 2))× with history)")
        }
    }

    /// The client's and the server's CPU microseconds per record of a measurement's best run.
    private func cpuPerRecord(_ item: Measured) -> (client: Double, server: Double?) {
        let index = item.bestIndex
        let client = index < item.clientCPU.count ? item.clientCPU[index] : 0
        let server = index < item.serverCPU.count ? item.serverCPU[index] : nil
        return (client / Double(records) * 1e6, server.map { $0 / Double(records) * 1e6 })
    }

    /// Imports `feed` with `count` processes (`ingest import`, then `ingest join`s once the
    /// run is registered); returns the wall seconds and the processes' CPU seconds.
    private func importProcesses(_ me: String, feed: String, count: Int, measuring item: inout Measured) throws -> (seconds: Double, cpu: Double) {
        // One connection and one count a poll, not `ingest status`'s reading (a connection
        // and its counts over the chunks each time), which ran beside the import until the
        // run registered and counted as the server's CPU. (At 200,000 records the run
        // registers after 0.1 s, so the figures did not move; a longer start would show it.)
        let watcher = try PostgresConnection(url)
        let runsBefore = try Self.runCount(watcher)
        let started = ContinuousClock.now
        var children = [try ChildProcess.start(me, ["import", feed, "--pipeline", item.pipeline ?? pipeline, "--store", target,
                                                    "--workers", String(workersPerProcess), "--quiet"])]
        // The joins start once the run is registered (split and chunks stored).
        while try Self.runCount(watcher) <= runsBefore {
            guard (ContinuousClock.now - started).seconds < 600 else {
                throw CommandFailure("the run was not registered within 10 minutes (is ingest import failing? run it alone to see)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        item.registration.append((ContinuousClock.now - started).seconds)
        for _ in 1..<max(1, count) {
            children.append(try ChildProcess.start(me, ["join", target, "--workers", String(workersPerProcess), "--quiet"]
                                                       + (joinsFromDatabase ? ["--from-database"] : [])))
        }
        let results = children.map { $0.wait() }
        if let failed = results.first(where: { $0.status != 0 }) {
            throw CommandFailure("an ingest process failed with exit status \(failed.status)")
        }
        item.peakRSS = max(item.peakRSS, results.map(\.peakRSSBytes).max() ?? 0)
        return ((ContinuousClock.now - started).seconds, results.reduce(0) { $0 + $1.cpuSeconds })
    }

    /// The runs the store has registered (none before its first import made the table).
    private static func runCount(_ connection: PostgresConnection) throws -> Int {
        guard try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else { return 0 }
        return Int(try connection.execute("SELECT count(*) FROM _ingest_runs")[0, 0] ?? "") ?? 0
    }

    /// The feed with every tenth record's title changed (made once, beside the feed). Read
    /// and written a line at a time: the bench's own memory is counted in its children's
    /// peak RSS (posix_spawn shares it until exec).
    private func changedFeed() throws -> String {
        let path = String(feed.dropLast(".json".count)) + "-changed.json"
        if FileManager.default.fileExists(atPath: path) { return path }
        guard let input = fopen(feed, "r") else { throw CommandFailure("cannot read \(feed)") }
        defer { fclose(input) }
        do {
            try FileOps.writeAtomically(to: path) { sink in
                var line: UnsafeMutablePointer<CChar>?
                var capacity = 0
                var record = 0
                defer { free(line) }
                while getline(&line, &capacity, input) > 0 {
                    var text = String(cString: line!)
                    if text.hasPrefix("{") {
                        if record % 10 == 0 { text = text.replacingOccurrences(of: #""title":""#, with: #""title":"changed "#) }
                        record += 1
                    }
                    try Array(text.utf8).withUnsafeBytes(sink)
                }
            }
        } catch {
            throw CommandFailure("cannot make \(path) from \(feed): \(error)")
        }
        return path
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

    /// Run `run` finished with every record done.
    private func checkCounts(run: Int) throws {
        let status = try PostgresStatus.read(url: url)
        guard status.runs.count == run, status.runs.last?.state == "finished", status.runs.last?.recordsDone == records else {
            throw CommandFailure("run \(run) did not finish with all \(records) records: \(status.runs.last.map { "run \($0.number) \($0.state), \($0.recordsDone) done" } ?? "no run")")
        }
    }

    /// Exports the tables Ingest filled, empties them, and times psql loading them back with \copy.
    private func copyTables(_ model: Model, psql: String) throws -> ChildProcess.Result {
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
        return result
    }

    static func serverTool(_ name: String) -> String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// The CPU seconds a PostgreSQL server has spent, read from /proc where it runs on this
/// machine: its postmaster and every process it started, live (their own times) or gone
/// (the postmaster's children's times).
struct ServerCPU {
    let postmaster: Int32

    /// Nil when the server does not run on this machine (or /proc cannot tell).
    init?(url: PostgresURL) {
        guard let connection = try? PostgresConnection(url), let text = try? connection.execute("SELECT pg_backend_pid()")[0, 0],
              let backend = Int32(text), let fields = Self.fields(backend), fields.count > 1,
              let parent = Int32(fields[1]), (try? String(contentsOfFile: "/proc/\(parent)/cmdline", encoding: .utf8))?.contains("postgres") == true
        else { return nil }
        postmaster = parent
    }

    /// The server's CPU seconds so far.
    func seconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        // stat fields after the name: state is [0]; utime [11], stime [12], cutime [13], cstime [14].
        var total = 0.0
        if let own = Self.fields(postmaster), own.count > 14 {
            total += [11, 12, 13, 14].reduce(0) { $0 + (Double(own[$1]) ?? 0) }
        }
        let children = (try? String(contentsOfFile: "/proc/\(postmaster)/task/\(postmaster)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ Int32($0) }) {
            if let fields = Self.fields(child), fields.count > 12 { total += (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0) }
        }
        return total / ticks
    }

    /// The fields of /proc/PID/stat after the process's name.
    private static func fields(_ pid: Int32) -> [String]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").map(String.init)
    }
}
