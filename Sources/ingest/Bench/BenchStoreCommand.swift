import ArgumentParser
import Foundation
import CSQLite
import IngestJSON
import IngestStore

extension Ingest {
    struct BenchStore: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "store",
            abstract: "Insert objects through a private context, beside raw sqlite3 inserts of the same rows.",
            discussion: """
            Each run is its own process: --small-objects and --objects objects of a 10-attribute \
            entity, saved every 5,000 and the context reset after each save; the raw run binds \
            the same rows on one prepared statement with the same transaction size.

            Then updates: a process changes two attributes of each of the --objects objects of a \
            stored copy, through a context (fetched in batches of 5,000, saved every 5,000: each \
            save reads its rows again to check them for conflicts) and through one prepared \
            UPDATE.

            Example:
              ingest bench store --objects 1000000 --runs 3
            """
        )

        @Option(help: "Objects in the large run.")
        var objects = 1_000_000

        @Option(name: .customLong("small-objects"), help: "Objects in the small run (for the memory comparison).")
        var smallObjects = 100_000

        @Option(help: "Timed runs of each.")
        var runs = 3

        @Option(name: .customLong("work-dir"), help: "Where the stores go.")
        var workDirectory = "/tmp/ingest-bench"

        func validate() throws {
            if objects < 1 || smallObjects < 1 || runs < 1 { throw ValidationError("counts must be at least 1") }
        }

        func run() throws {
            try FileOpsCLI.makeDirectory(workDirectory)
            let me = ChildProcess.currentExecutable
            var rows: [[String]] = []
            var notes: [String] = []
            var rss: [Int] = []
            for count in [smallObjects, objects] {
                var raw: [ChildProcess.Result] = []
                var context: [ChildProcess.Result] = []
                for _ in 0..<runs {
                    for (mode, into) in [("raw", 0), ("context", 1)] {
                        let path = "\(workDirectory)/store-\(mode)-\(count).sqlite"
                        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                        let result = try ChildProcess.run(me, ["bench", "store-run", "--mode", mode, "--objects", String(count), "--path", path])
                        guard result.status == 0 else { throw CommandFailure("bench store-run \(mode) failed with exit status \(result.status)") }
                        if into == 0 { raw.append(result) } else { context.append(result) }
                    }
                }
                rows.append(row("raw sqlite3 (prepared statement)", count, raw))
                rows.append(row("ObjectContext insert + save", count, context))
                rss.append(context.map(\.peakRSSBytes).max()!)
                let ratio = 100 * BenchSplit.best(raw) / BenchSplit.best(context)
                let median = 100 * BenchSplit.median(raw) / BenchSplit.median(context)
                notes.append("\(Format.count(count)) objects: the context inserts at \(Format.fixed(ratio, places: 0))% of the raw rate (best runs), \(Format.fixed(median, places: 0))% (median runs)")
            }
            // Updates, on a stored copy made by an untimed run.
            var raw: [ChildProcess.Result] = []
            var context: [ChildProcess.Result] = []
            let source = "\(workDirectory)/store-source-\(objects).sqlite"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: source + suffix) }
            let made = try ChildProcess.run(me, ["bench", "store-run", "--mode", "raw", "--objects", String(objects), "--path", source])
            guard made.status == 0 else { throw CommandFailure("bench store-run raw failed with exit status \(made.status)") }
            for _ in 0..<runs {
                for mode in ["update-raw", "update-context"] {
                    let path = "\(workDirectory)/store-\(mode)-\(objects).sqlite"
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                    try FileManager.default.copyItem(atPath: source, toPath: path)
                    let result = try ChildProcess.run(me, ["bench", "store-run", "--mode", mode, "--objects", String(objects), "--path", path])
                    guard result.status == 0 else { throw CommandFailure("bench store-run \(mode) failed with exit status \(result.status)") }
                    if mode == "update-raw" { raw.append(result) } else { context.append(result) }
                }
            }
            rows.append(row("raw sqlite3 UPDATE (prepared statement)", objects, raw))
            rows.append(row("ObjectContext fetch + change + save", objects, context))
            notes.append("\(Format.count(objects)) updates: the context at \(Format.fixed(100 * BenchSplit.best(raw) / BenchSplit.best(context), places: 0))% of the raw rate (best runs)")
            print(Table.render(header: ["run", "objects", "best s", "median s", "objects/s", "peak RSS"], rows: rows))
            notes.forEach { print($0) }
            let change = 100 * Double(rss[1] - rss[0]) / Double(rss[0])
            print("peak RSS of the context run \(Format.count(smallObjects)) → \(Format.count(objects)) objects: \(change >= 0 ? "+" : "")\(Format.fixed(change, places: 1))%")
            print("objects/s from the best of \(runs) runs; each run is its own process.")
        }

        private func row(_ name: String, _ count: Int, _ runs: [ChildProcess.Result]) -> [String] {
            let best = BenchSplit.best(runs)
            return [name, Format.count(count), Format.fixed(best, places: 3), Format.fixed(BenchSplit.median(runs), places: 3),
                    Format.count(Int(Double(count) / best)), ByteCount.format(runs.map(\.peakRSSBytes).max()!)]
        }
    }

    /// One measured run of `bench store`, in its own process.
    struct BenchStoreRun: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "store-run", shouldDisplay: false)

        @Option var mode: String
        @Option var objects: Int
        @Option var path: String

        static let batch = 5_000

        static let model = Model(entities: [Entity("Item", attributes: [
            Attribute("name", .string), Attribute("count", .int64), Attribute("price", .double),
            Attribute("flag", .bool), Attribute("created", .date), Attribute("code", .int32),
            Attribute("ratio", .double), Attribute("note", .string), Attribute("key", .uuid),
            Attribute("payload", .binary),
        ])])

        /// The same ten values for row `i` in both runs.
        static func values(_ i: Int) -> [Value] {
            [.string("item \(i)"), .int(Int64(i) * 7), .double(Double(i) * 0.25), .bool(i % 2 == 0),
             .date(Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(i))), .int(Int64(i % 100_000)),
             .double(1.0 / Double(i + 1)), .string("note"),
             .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, UInt8(i >> 24 & 0xFF), UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)))),
             .binary([UInt8(i & 0xFF), UInt8(i >> 8 & 0xFF), 1, 2])]
        }

        func run() throws {
            let coordinator = try PersistentStoreCoordinator(model: Self.model, path: path)
            switch mode {
            case "context": try runContext(coordinator)
            case "raw": try runRaw()
            case "update-context": try runContextUpdate(coordinator)
            case "update-raw": try runRawUpdate()
            default: throw ValidationError("--mode is context, raw, update-context or update-raw")
            }
        }

        private func runContext(_ coordinator: PersistentStoreCoordinator) throws {
            let context = ObjectContext(coordinator: coordinator, name: "bench")
            let names = Self.model.entities[0].attributes.map(\.name)
            try context.performAndWait {
                for i in 0..<objects {
                    let item = context.insert("Item")
                    for (name, value) in zip(names, Self.values(i)) { item[name] = value }
                    if (i + 1) % Self.batch == 0 || i == objects - 1 {
                        try context.save()
                        context.reset()
                    }
                }
            }
        }

        /// Changes `count` and `note` of every stored item, in saves of `batch`; each batch's
        /// objects become faults after their save, as an importer's would.
        private func runContextUpdate(_ coordinator: PersistentStoreCoordinator) throws {
            let context = ObjectContext(coordinator: coordinator, name: "bench")
            var request = FetchRequest("Item")
            request.fetchBatchSize = Self.batch
            try context.performAndWait {
                let items = try context.fetchResults(request)
                var batch: [ManagedObject] = []
                for (i, item) in items.enumerated() {
                    item["count"] = .int(-Int64(i))
                    item["note"] = .string("updated")
                    batch.append(item)
                    if batch.count == Self.batch || i == items.count - 1 {
                        try context.save()
                        for object in batch { context.refresh(object, mergeChanges: false) }
                        batch.removeAll(keepingCapacity: true)
                    }
                }
            }
        }

        /// The updates' reference: one prepared UPDATE by key, the same transaction size.
        private func runRawUpdate() throws {
            try Self.runPrepared(path, "UPDATE \"Item\" SET \"count\" = ?, \"note\" = ? WHERE \"_pk\" = ?", rows: objects) { statement, i in
                sqlite3_bind_int64(statement, 1, -Int64(i))
                sqlite3_bind_text(statement, 2, "updated", -1, Self.transient)
                sqlite3_bind_int64(statement, 3, Int64(i + 1))
            }
        }

        /// The reference: one prepared INSERT, values bound with sqlite3_bind_*, the same
        /// transaction size and pragmas as the store.
        private func runRaw() throws {
            let sql = "INSERT INTO \"Item\" (\"_pk\", \"name\", \"count\", \"price\", \"flag\", \"created\", \"code\", \"ratio\", \"note\", \"key\", \"payload\") VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            try Self.runPrepared(path, sql, rows: objects) { statement, i in
                sqlite3_bind_int64(statement, 1, Int64(i + 1))
                for (offset, value) in Self.values(i).enumerated() {
                    let index = Int32(offset + 2)
                    switch value {
                    case .string(var text):
                        _ = text.withUTF8 { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
                    case .int(let number): sqlite3_bind_int64(statement, index, number)
                    case .double(let number): sqlite3_bind_double(statement, index, number)
                    case .bool(let flag): sqlite3_bind_int64(statement, index, flag ? 1 : 0)
                    case .date(let date): sqlite3_bind_double(statement, index, date.timeIntervalSinceReferenceDate)
                    case .uuid(let uuid):
                        _ = withUUIDText(uuid) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
                    case .binary(let bytes):
                        _ = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
                    default: sqlite3_bind_null(statement, index)
                    }
                }
            }
        }

        /// SQLite copies what is bound with this destructor.
        private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

        /// Runs `sql`, prepared once, for rows 0..<`rows` as `bind` binds them, committing
        /// every `batch` rows, with the store's pragmas: the raw sqlite3 runs.
        private static func runPrepared(_ path: String, _ sql: String, rows: Int, bind: (OpaquePointer, Int) -> Void) throws {
            var db: OpaquePointer?
            guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw CommandFailure("cannot open \(path)") }
            defer { sqlite3_close(db) }
            sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", nil, nil, nil)
            var statement: OpaquePointer?
            guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
                throw CommandFailure("cannot prepare: \(String(cString: sqlite3_errmsg(db)))")
            }
            defer { sqlite3_finalize(statement) }
            sqlite3_exec(db, "BEGIN", nil, nil, nil)
            for i in 0..<rows {
                bind(statement, i)
                guard sqlite3_step(statement) == SQLITE_DONE else { throw CommandFailure(String(cString: sqlite3_errmsg(db))) }
                sqlite3_reset(statement)
                if (i + 1) % batch == 0 {
                    sqlite3_exec(db, "COMMIT", nil, nil, nil)
                    sqlite3_exec(db, "BEGIN", nil, nil, nil)
                }
            }
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
        }
    }
}
