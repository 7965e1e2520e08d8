import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct BenchImport: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a generated feed with 1, 2 and 4 workers beside a C importer, the sqlite3 CLI and DuckDB.",
            discussion: """
            For --small-records and --records records: generates the feed (reused if present), then \
            per run, alternating, each in its own process and each into a fresh store with the same \
            tables (made by Ingest from --pipeline): the C reference importer \
            (Benchmarks/reference-importer/importer.c, compiled here with cc: yajl callbacks, prepared \
            statements, an in-memory photographer table, a commit every 10,000 records, WAL, \
            synchronous=NORMAL, the same 8 MiB page cache), the sqlite3 CLI's fastest form (json_each \
            into a TEMP staging table, INSERT OR IGNORE the photographers, INSERT … SELECT the photos, \
            one transaction), DuckDB's read_json into the same two tables in a DuckDB file of its own \
            (its CLI, or its Python package; skipped with a note when neither is installed; all \
            cores), and `ingest import` with each worker count in --workers. Prints the best \
            run of each: records/s, MB/s, peak RSS, CPU time over wall time, the ratios to the \
            references, and the import's stage times. --svg draws the per-worker timeline of the \
            largest feed's import with 2 workers (or the last worker count).

            With --store postgresql://…: the feed imported into that PostgreSQL store by 1, 2 and 4 \
            processes (--processes; --workers N gives each N workers, default 1), beside psql's \\copy \
            of the same rows into the same tables.

            Example: ingest bench import --runs 3 --svg timeline.svg
            """
        )

        @OptionGroup var feeds: BenchFeedOptions

        var records: Int { feeds.records }
        var smallRecords: Int { feeds.smallRecords }
        var workDirectory: String { feeds.workDirectory }
        var feedStyle: FeedGenerator.Style { feeds.feedStyle }

        @Option(help: "Worker counts to run, comma-separated.")
        var workers = "1,2,4"

        @Option(help: "Timed runs of each command.")
        var runs = 1

        @Option(name: .customLong("pipeline"), help: ArgumentHelp("The pipeline (default: the built-in Pipelines/bench-photos.json: the generator's photo feed, mapped as the C importer writes it).", valueName: "file"))
        var pipelineFile: String?

        @Option(name: .customLong("reference-source"), help: ArgumentHelp("The C reference importer's source.", valueName: "file"))
        var referenceSource = "Benchmarks/reference-importer/importer.c"

        @Option(help: ArgumentHelp("A PostgreSQL store (postgresql://…) to bench instead: 1, 2 and 4 processes beside psql's \\copy. Its tables are dropped and made again.", valueName: "url"))
        var store: String?

        @Option(help: "With --store: process counts to run, comma-separated.")
        var processes = "1,2,4"

        @Flag(name: .customLong("joins-from-database"),
              help: "With --store: the joined processes read every chunk from the database (join --from-database), as machines that cannot see the importing process's chunk files do; by default they read those files, as on one machine.")
        var joinsFromDatabase = false

        @Option(help: ArgumentHelp("Write the records/s timeline of the largest import with 2 workers as an SVG chart.",
                                   valueName: "file"))
        var svg: String?

        var workerCounts: [Int] { workers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

        func validate() throws {
            if runs < 1 { throw ValidationError("--runs must be at least 1") }
            if workerCounts.isEmpty || workerCounts.contains(where: { $0 < 1 }) {
                throw ValidationError("--workers takes worker counts like 1,2,4")
            }
            // Refused here, not by the import it would run minutes later.
            if let many = workerCounts.first(where: { $0 > PipelineSpec.maxWorkers }) {
                throw ValidationError("--workers \(many): at most \(PipelineSpec.maxWorkers) (each worker is a thread with its own context and connection)")
            }
            let counts = processes.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            if counts.isEmpty || counts.contains(where: { ($0 ?? 0) < 1 }) { throw ValidationError("--processes takes counts like 1,2,4") }
            if store == nil && processes != "1,2,4" { throw ValidationError("--processes is for a PostgreSQL store (--store postgresql://…)") }
        }

        /// The best run of one command at one size.
        struct Measured {
            var name: String
            var workers: String
            var runs: [ChildProcess.Result]
            var report: ImportReport?
            /// The pipeline this import runs (history on), or its copy with history off.
            var pipeline = ""
            var best: ChildProcess.Result { runs.min { $0.seconds < $1.seconds }! }
        }

        func run() throws {
            // Found out before minutes of benchmarking, not after.
            if let svg { try FileOpsCLI.checkWritable(svg) }
            try FileOpsCLI.makeDirectory(workDirectory)
            let pipeline = try BenchPipeline.path(pipelineFile, in: workDirectory)
            if let store {
                guard PostgresURL.isPostgres(store) else { throw ValidationError("--store takes a PostgreSQL URL (postgresql://…)") }
                let counts = processes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                guard !counts.isEmpty, counts.allSatisfy({ $0 >= 1 }) else { throw ValidationError("--processes takes counts like 1,2,4") }
                let (feed, bytes) = try BenchSplit.generatedFeed(records: records, in: workDirectory, style: feedStyle, repeatKeys: feeds.repeatKeys)
                return try BenchPostgresImport(url: try PostgresURL(store), feed: feed, bytes: bytes, records: records,
                                               pipeline: pipeline,
                                               processCounts: counts, workersPerProcess: workerCounts.count == 1 ? workerCounts[0] : 1,
                                               joinsFromDatabase: joinsFromDatabase, runs: runs, workDirectory: workDirectory).run()
            }
            let spec = try PipelineSpec.load(path: pipeline)
            let quiet = try BenchPipeline.withoutHistory(pipeline, in: workDirectory)
            let template = "\(workDirectory)/template.sqlite"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: template + suffix) }
            _ = try PersistentStoreCoordinator(model: spec.model, path: template)
            let reference = try compileReference()
            let sqlite = ChildProcess.find("sqlite3")
            if sqlite == nil { Console.error("sqlite3 not found: install it (apt-get install sqlite3) for the CLI's rate\n") }
            let duckDB = DuckDBLoad.find(threads: ProcessInfo.processInfo.activeProcessorCount)
            if duckDB == nil { Console.error(DuckDBLoad.missingNote) }
            let me = ChildProcess.currentExecutable
            var rows: [[String]] = []
            var notes: [String] = []
            var rss: [String: [Int]] = [:]
            var chartReport: ImportReport?
            for count in [smallRecords, records] {
                let (feed, bytes) = try BenchSplit.generatedFeed(records: count, in: workDirectory, style: feedStyle, repeatKeys: feeds.repeatKeys)
                var measured: [Measured] = []
                if reference != nil { measured.append(Measured(name: "C reference importer (1 core)", workers: "-", runs: [])) }
                if sqlite != nil { measured.append(Measured(name: "sqlite3 CLI (json_each staging)", workers: "-", runs: [])) }
                if let duckDB { measured.append(Measured(name: duckDB.name, workers: "\(duckDB.threads) threads", runs: [])) }
                let firstImport = measured.count
                for workers in workerCounts { measured.append(Measured(name: "ingest import", workers: String(workers), runs: [], pipeline: pipeline)) }
                // History's cost: the same import with history off, at the first worker count.
                measured.append(Measured(name: "ingest import, history off", workers: String(workerCounts[0]), runs: [], pipeline: quiet))
                // Alternate the commands so that drift in the machine's speed hits all alike.
                for _ in 0..<runs {
                    for index in measured.indices {
                        let store = "\(workDirectory)/bench-\(index).sqlite"
                        for suffix in ["", "-wal", "-shm", ".report.json", ".rejects.ndjson", ".lock"] {
                            try? FileManager.default.removeItem(atPath: store + suffix)
                        }
                        try? FileManager.default.removeItem(atPath: store + ".chunks")
                        if index >= firstImport {
                            let result = try checked(ChildProcess.run(me, ["import", feed, "--pipeline", measured[index].pipeline, "--store", store,
                                                                           "--workers", measured[index].workers, "--quiet"]), "ingest import")
                            let report = try JSONDecoder().decode(ImportReport.self, from: Data(contentsOf: URL(fileURLWithPath: store + ".report.json")))
                            if measured[index].runs.isEmpty || result.seconds < measured[index].best.seconds { measured[index].report = report }
                            measured[index].runs.append(result)
                        } else if measured[index].name.hasPrefix("DuckDB"), let duckDB {
                            let file = "\(workDirectory)/bench-\(index).duckdb"
                            measured[index].runs.append(try checked(duckDB.run(feed: feed, store: file, workDirectory: workDirectory), duckDB.name))
                        } else {
                            try FileManager.default.copyItem(atPath: template, toPath: store)
                            let result = if measured[index].name.hasPrefix("C"), let reference {
                                try checked(ChildProcess.run(reference, [feed, store]), "the C reference importer")
                            } else {
                                try loadWithCLI(sqlite!, feed: feed, store: store)
                            }
                            measured[index].runs.append(result)
                        }
                    }
                }
                let cBest = measured.first { $0.name.hasPrefix("C") }?.best.seconds
                let cliBest = measured.first { $0.name.hasPrefix("sqlite3") }?.best.seconds
                let duckBest = measured.first { $0.name.hasPrefix("DuckDB") }?.best.seconds
                for item in measured {
                    let best = item.best
                    rss[item.name + " " + item.workers, default: []].append(item.runs.map(\.peakRSSBytes).max()!)
                    let stages = item.report.map { report -> String in
                        let s = report.stages
                        return [s.split, s.parse, s.map, s.save, s.index].map { Format.fixed($0, places: 1) }.joined(separator: " / ")
                    } ?? "-"
                    rows.append([item.name, item.workers, Format.count(count), Format.fixed(Double(bytes) / 1e6, places: 1),
                                 Format.fixed(best.seconds, places: 2), Format.count(Int(Double(count) / best.seconds)),
                                 Format.fixed(Double(bytes) / 1e6 / best.seconds, places: 1),
                                 ByteCount.format(item.runs.map(\.peakRSSBytes).max()!),
                                 Format.fixed(best.cpuSeconds / best.seconds, places: 2),
                                 cBest.map { Format.fixed($0 / best.seconds, places: 2) + "×" } ?? "-",
                                 cliBest.map { Format.fixed($0 / best.seconds, places: 2) + "×" } ?? "-",
                                 duckBest.map { Format.fixed($0 / best.seconds, places: 2) + "×" } ?? "-", stages])
                }
                if count == records { chartReport = (measured.first { $0.workers == "2" } ?? measured.last)?.report }
                if let on = measured.first(where: { $0.name == "ingest import" && $0.workers == String(workerCounts[0]) }),
                   let off = measured.first(where: { $0.name.hasSuffix("history off") }) {
                    notes.append("history on vs off, \(on.workers) worker(s), \(Format.count(count)) records: "
                        + "\(Format.count(Int(Double(count) / on.best.seconds))) vs \(Format.count(Int(Double(count) / off.best.seconds))) records/s "
                        + "(\(Format.fixed(off.best.seconds / on.best.seconds, places: 2))× with history)")
                }
            }
            print(Table.render(header: ["command", "workers", "records", "MB", "best s", "records/s", "MB/s", "peak RSS",
                                        "CPU/wall", "vs C", "vs CLI", "vs DuckDB", "split / parse / map / save / index s"], rows: rows))
            for (name, sizes) in rss.sorted(by: { $0.key < $1.key }) where sizes.count == 2 && name.hasPrefix("ingest") {
                let change = 100 * Double(sizes[1] - sizes[0]) / Double(sizes[0])
                notes.append("peak RSS of \(name) worker(s), \(Format.count(smallRecords)) → \(Format.count(records)) records: "
                    + "\(ByteCount.format(sizes[0])) → \(ByteCount.format(sizes[1])) (\(change >= 0 ? "+" : "")\(Format.fixed(change, places: 1))%)")
            }
            notes.forEach { print($0) }
            print("Best of \(runs) run(s), alternating, each its own process; vs C, vs CLI and vs DuckDB are their best time over this one's "
                + "(above 1 is faster). CPU/wall is user+sys over wall time. Stage times: split is wall time (it overlaps the import); "
                + "parse (read and check chunks), map and save are summed over workers; index builds the secondary indexes at the end.")
            if let svg, let report = chartReport, let timeline = report.timeline {
                try FileOpsCLI.write(TimelineChart.svg(timeline, title: "ingest import, \(Format.count(report.records)) records, \(report.workers) workers"),
                                     to: svg)
                print("timeline chart: \(svg)")
            }
        }

        private func checked(_ result: ChildProcess.Result, _ what: String) throws -> ChildProcess.Result {
            guard result.status == 0 else { throw CommandFailure("\(what) failed with exit status \(result.status)") }
            return result
        }

        /// The C reference importer, compiled into the work directory; nil (with a note) without cc or its source.
        private func compileReference() throws -> String? {
            guard let referenceSource = Self.locate(referenceSource) else {
                Console.error("\(referenceSource) not found: run from the repository (or pass --reference-source) for the C reference\n")
                return nil
            }
            guard let cc = ChildProcess.find("cc") else {
                Console.error("cc not found: install gcc for the C reference importer\n")
                return nil
            }
            let binary = "\(workDirectory)/reference-importer"
            _ = try checked(ChildProcess.run(cc, ["-O2", "-o", binary, referenceSource, "-lyajl", "-lsqlite3"]), "compiling \(referenceSource)")
            return binary
        }

        /// `path` as given, else (a relative path, run from elsewhere) in the repository the
        /// running binary was built in: the bench then runs from any directory.
        static func locate(_ path: String) -> String? {
            if FileOpsCLI.exists(path) { return path }
            guard !path.hasPrefix("/") else { return nil }
            var directory = ChildProcess.currentExecutable
            for _ in 0..<5 {
                guard let slash = directory.lastIndex(of: "/"), slash > directory.startIndex else { return nil }
                directory = String(directory[..<slash])
                if FileOpsCLI.exists(directory + "/" + path) { return directory + "/" + path }
            }
            return nil
        }

        /// The sqlite3 CLI's fastest form of the same load, into tables Ingest made.
        private func loadWithCLI(_ sqlite: String, feed: String, store: String) throws -> ChildProcess.Result {
            let script = "\(workDirectory)/cli-load.sql"
            let quotedFeed = feed.replacingOccurrences(of: "'", with: "''")
            let sql = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -8192;
            BEGIN;
            CREATE TEMP TABLE staging AS SELECT value AS v FROM json_each(CAST(readfile('\(quotedFeed)') AS TEXT));
            INSERT OR IGNORE INTO "Photographer" ("_pk", "id", "name")
              SELECT NULL, v->>'$.photographer.id', v->>'$.photographer.name' FROM staging;
            INSERT INTO "Photo" ("id", "title", "subtitle", "photoURL", "thumbnailURL", "uploadDate", "views",
                                 "latitude", "longitude", "_whoTook")
              SELECT v->>'$.id', v->>'$.title', v->>'$.subtitle', v->>'$.photoURL', v->>'$.thumbnailURL',
                     v->>'$.uploadDate', CAST(v->>'$.views' AS INTEGER), v->>'$.latitude', v->>'$.longitude',
                     (SELECT "_pk" FROM "Photographer" WHERE "id" = v->>'$.photographer.id')
              FROM staging;
            COMMIT;

            """
            try FileOpsCLI.write(sql, to: script)
            return try checked(ChildProcess.run(sqlite, [store], standardInput: script), "sqlite3 on \(script)")
        }
    }
}
