import ArgumentParser
import Foundation
import IngestJSON
import IngestPipeline
import IngestStore

extension Ingest {
    struct BenchImport: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a generated feed with 1 and 2 workers and compare with the sqlite3 CLI loading it.",
            discussion: """
            For --small-records and --records records: generates the feed (reused if present), \
            then per run, each in its own process: `ingest import` (split and import, fresh store) \
            with each worker count in --workers, and the sqlite3 CLI loading the same feed into \
            the same tables (made by Ingest from the pipeline's model, so the indexes match) in \
            one transaction — json_each into a staging table, then INSERT OR IGNORE photographers \
            and INSERT photos — with WAL, synchronous=NORMAL and the same 8 MiB writer page cache. \
            Prints the best run of each: records/s, MB/s, peak RSS and the import's stage times.
            """
        )

        @Option(help: "Records in the large feed.")
        var records = 1_000_000

        @Option(name: .customLong("small-records"), help: "Records in the small feed (for the memory comparison).")
        var smallRecords = 100_000

        @Option(help: "Worker counts to run, comma-separated.")
        var workers = "1,2"

        @Option(help: "Timed runs of each command.")
        var runs = 1

        @Option(help: ArgumentHelp("The pipeline (the generator's photo feed).", valueName: "file"))
        var pipeline = "Pipelines/photos.json"

        @Option(name: .customLong("work-dir"), help: "Where feeds and stores go.")
        var workDirectory = "/tmp/ingest-bench"

        var workerCounts: [Int] { workers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

        func validate() throws {
            if records < 1 || smallRecords < 1 { throw ValidationError("record counts must be at least 1") }
            if runs < 1 { throw ValidationError("--runs must be at least 1") }
            if workerCounts.isEmpty || workerCounts.contains(where: { $0 < 1 }) {
                throw ValidationError("--workers takes worker counts like 1,2")
            }
        }

        func run() throws {
            try FileOpsCLI.makeDirectory(workDirectory)
            let spec = try PipelineSpec.load(path: pipeline)
            let sqlite = ChildProcess.find("sqlite3")
            if sqlite == nil { Console.error("sqlite3 not found: install it (apt-get install sqlite3) for the reference rate\n") }
            let me = ChildProcess.currentExecutable
            var rows: [[String]] = []
            var notes: [String] = []
            var rssByWorkers: [Int: [Int]] = [:]
            for count in [smallRecords, records] {
                let (feed, bytes) = try BenchSplit.generatedFeed(records: count, in: workDirectory)
                var cliRuns: [ChildProcess.Result] = []
                var importRuns: [Int: [(ChildProcess.Result, ImportReport)]] = [:]
                for _ in 0..<runs {
                    if let sqlite { cliRuns.append(try loadWithCLI(sqlite, feed: feed, spec: spec)) }
                    for workers in workerCounts {
                        let store = "\(workDirectory)/import-\(count).sqlite"
                        let result = try ChildProcess.run(me, ["import", feed, "--pipeline", pipeline, "--store", store,
                                                               "--workers", String(workers), "--restart", "--quiet"])
                        guard result.status == 0 else { throw CommandFailure("ingest import failed with exit status \(result.status)") }
                        let report = try JSONDecoder().decode(ImportReport.self, from: Data(contentsOf: URL(fileURLWithPath: store + ".report.json")))
                        importRuns[workers, default: []].append((result, report))
                    }
                }
                let cliBest = cliRuns.map(\.seconds).min()
                if let cliBest {
                    rows.append(["sqlite3 CLI (json_each, one transaction)", "-", Format.count(count), Format.fixed(Double(bytes) / 1e6, places: 1),
                                 Format.fixed(cliBest, places: 2), Format.count(Int(Double(count) / cliBest)),
                                 Format.fixed(Double(bytes) / 1e6 / cliBest, places: 1), ByteCount.format(cliRuns.map(\.peakRSSBytes).max()!),
                                 "1.00×", "-"])
                }
                for workers in workerCounts {
                    let runs = importRuns[workers] ?? []
                    guard let (best, report) = runs.min(by: { $0.0.seconds < $1.0.seconds }) else { continue }
                    let rss = runs.map(\.0.peakRSSBytes).max()!
                    rssByWorkers[workers, default: []].append(rss)
                    let stages = report.stages
                    rows.append(["ingest import", String(workers), Format.count(count), Format.fixed(Double(bytes) / 1e6, places: 1),
                                 Format.fixed(best.seconds, places: 2), Format.count(Int(Double(count) / best.seconds)),
                                 Format.fixed(Double(bytes) / 1e6 / best.seconds, places: 1), ByteCount.format(rss),
                                 cliBest.map { Format.fixed($0 / best.seconds, places: 2) + "×" } ?? "-",
                                 "\(Format.fixed(stages.split, places: 1)) / \(Format.fixed(stages.parse, places: 1)) / "
                                    + "\(Format.fixed(stages.map, places: 1)) / \(Format.fixed(stages.save, places: 1)) / "
                                    + Format.fixed(stages.index, places: 1)])
                }
            }
            print(Table.render(header: ["command", "workers", "records", "MB", "best s", "records/s", "MB/s", "peak RSS", "vs CLI",
                                        "split / parse / map / save / index s"], rows: rows))
            for (workers, rss) in rssByWorkers.sorted(by: { $0.key < $1.key }) where rss.count == 2 {
                let change = 100 * Double(rss[1] - rss[0]) / Double(rss[0])
                notes.append("peak RSS with \(workers) worker(s), \(Format.count(smallRecords)) → \(Format.count(records)) records: "
                    + "\(change >= 0 ? "+" : "")\(Format.fixed(change, places: 1))%")
            }
            notes.forEach { print($0) }
            print("Best of \(runs) run(s), each its own process. Stage times: split is wall time (it overlaps the import); "
                + "parse, map and save are summed over workers; index is building the secondary indexes at the end.")
        }

        /// The sqlite3 CLI's fastest form of the same load, into tables Ingest made.
        private func loadWithCLI(_ sqlite: String, feed: String, spec: PipelineSpec) throws -> ChildProcess.Result {
            let store = "\(workDirectory)/cli.sqlite"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
            _ = try PersistentStoreCoordinator(model: spec.model, path: store)
            let script = "\(workDirectory)/cli-load.sql"
            let quotedFeed = feed.replacingOccurrences(of: "'", with: "''")
            let sql = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -8192;
            BEGIN;
            CREATE TEMP TABLE staging AS SELECT value AS v FROM json_each(CAST(readfile('\(quotedFeed)') AS TEXT));
            INSERT OR IGNORE INTO "Photographer" ("id", "name")
              SELECT v->>'$.photographer.id', v->>'$.photographer.name' FROM staging;
            INSERT INTO "Photo" ("id", "title", "subtitle", "photoURL", "thumbnailURL", "uploadDate", "views",
                                 "latitude", "longitude", "tags", "_whoTook")
              SELECT v->>'$.id', v->>'$.title', v->>'$.subtitle', v->>'$.photoURL', v->>'$.thumbnailURL',
                     unixepoch(v->>'$.uploadDate') - 978307200, CAST(v->>'$.views' AS INTEGER),
                     v->>'$.latitude', v->>'$.longitude', v->'$.tags',
                     (SELECT "_pk" FROM "Photographer" WHERE "id" = v->>'$.photographer.id')
              FROM staging;
            COMMIT;

            """
            try Data(sql.utf8).write(to: URL(fileURLWithPath: script))
            let result = try ChildProcess.run(sqlite, [store], standardInput: script)
            guard result.status == 0 else { throw CommandFailure("sqlite3 failed with exit status \(result.status) on \(script)") }
            return result
        }
    }
}
