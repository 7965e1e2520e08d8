import ArgumentParser
import Foundation
import IngestJSON
import IngestStore

extension Ingest {
    struct BenchFetch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fetch",
            abstract: "Count and fetch by an indexed attribute and by a to-one key path, beside the sqlite3 CLI.",
            discussion: """
            Builds (or reuses) a store of --objects items and one owner per 20 items in --work-dir, \
            then times each query through Ingest (median of --runs, warm) and the very same SQL \
            through the sqlite3 command-line shell (its .timer, median of --runs).

            Example:
              ingest bench fetch --objects 1000000 --runs 3
            """
        )

        @Option(help: "Items in the store.")
        var objects = 1_000_000

        @Option(help: "Timed runs of each query.")
        var runs = 9

        @Option(name: .customLong("work-dir"), help: "Where the store goes.")
        var workDirectory = "/tmp/ingest-bench"

        func validate() throws {
            if objects < 100 { throw ValidationError("--objects must be at least 100") }
            if runs < 1 { throw ValidationError("--runs must be at least 1") }
        }

        static let model = Model(entities: [
            Entity("Item", attributes: [Attribute("code", .int64, indexed: true), Attribute("name", .string)],
                   relationships: [Relationship("owner", to: "Owner", inverse: "items")]),
            Entity("Owner", attributes: [Attribute("name", .string, indexed: true)],
                   relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true)]),
        ])

        func run() throws {
            guard let sqlite3 = ChildProcess.find("sqlite3") else {
                throw CommandFailure("the sqlite3 shell is not installed (apt-get install sqlite3): it is the reference")
            }
            try FileOpsCLI.makeDirectory(workDirectory)
            let path = "\(workDirectory)/store-fetch-\(objects).sqlite"
            if !FileOpsCLI.exists(path) { try build(path) }
            let coordinator = try PersistentStoreCoordinator(model: Self.model, path: path)
            let owners = max(1, objects / 20)
            let code = Int64(objects / 2)
            let queries: [(String, FetchRequest, Bool)] = [
                ("count: code BETWEEN (indexed attribute)",
                 FetchRequest("Item", predicate: try QueryPredicate(format: "code BETWEEN {%d, %d}", code, code + 5_000)), true),
                ("first 100: code >= (indexed), sorted by code",
                 FetchRequest("Item", predicate: try QueryPredicate(format: "code >= %d", code),
                              sortDescriptors: [FetchSortDescriptor("code")], fetchLimit: 100), false),
                ("count: owner.name = (to-one key path)",
                 FetchRequest("Item", predicate: try QueryPredicate(format: "owner.name = %@", "owner \(owners / 2)")), true),
                ("first 100: owner.name IN (to-one key path), sorted by code",
                 FetchRequest("Item", predicate: try QueryPredicate(format: "owner.name IN %@", (0..<10).map { "owner \($0 * 7)" }),
                              sortDescriptors: [FetchSortDescriptor("code")], fetchLimit: 100), false),
            ]
            var rows: [[String]] = []
            for (label, request, isCount) in queries {
                let context = ObjectContext(coordinator: coordinator, name: "bench")
                var times: [Double] = []
                var result = 0
                for _ in 0..<runs {
                    context.performAndWait { context.reset() }
                    let clock = ContinuousClock()
                    let start = clock.now
                    result = try context.performAndWait { () throws -> Int in
                        if isCount { return try context.count(for: request) }
                        let objects = try context.fetch(request)
                        for object in objects { _ = object.name }  // materialize what was fetched
                        return objects.count
                    }
                    times.append((clock.now - start).seconds * 1000)
                }
                let (sql, arguments) = try coordinator.sql(for: request, countOnly: isCount)
                let ours = BenchFetch.median(times)
                // Enough repetitions that the shell runs the query for about a second.
                let repetitions = max(runs, min(20_000, Int(1000 / max(ours, 0.05))))
                let theirs = try Self.sqliteMillis(sqlite3, path: path, sql: sql, arguments: arguments, repetitions: repetitions)
                rows.append([label, Format.count(result), Format.fixed(ours, places: 3), Format.fixed(theirs, places: 3),
                             Format.fixed(ours / max(theirs, 0.001), places: 2) + "×", isCount ? "≤ 2×" : "≤ 3×"])
            }
            print(Table.render(header: ["query", "rows", "Ingest ms", "sqlite3 CLI ms", "ratio", "target"], rows: rows))
            print("\(Format.count(objects)) items, \(Format.count(owners)) owners. Ingest: median of \(runs) warm runs (count(for:), or fetch(_:) and reading each object).")
            print("sqlite3 CLI: the same SQL and parameters, repeated in one shell, less the same shell running SELECT 1 as often; best of 3.")
        }

        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }

        private func build(_ path: String) throws {
            Console.error("building \(path)…\n")
            let coordinator = try PersistentStoreCoordinator(model: Self.model, path: path)
            let context = ObjectContext(coordinator: coordinator, name: "build")
            let ownerCount = max(1, objects / 20)
            try context.performAndWait {
                var owners: [ObjectID] = []
                var batch: [ManagedObject] = []
                for i in 0..<ownerCount {
                    let owner = context.insert("Owner")
                    owner.name = .string("owner \(i)")
                    batch.append(owner)
                    if (i + 1) % 5_000 == 0 || i == ownerCount - 1 {
                        try context.save()
                        owners += batch.map(\.objectID)
                        batch = []
                        context.reset()
                    }
                }
                for i in 0..<objects {
                    let item = context.insert("Item")
                    item.code = .int(Int64(i))
                    item.name = .string("item \(i)")
                    item.setObject(context.object(with: owners[i % ownerCount]), forKey: "owner")
                    if (i + 1) % 5_000 == 0 || i == objects - 1 {
                        try context.save()
                        context.reset()
                    }
                }
            }
        }

        /// Milliseconds the sqlite3 shell takes per run of `sql`: the shell's own timer
        /// counts whole milliseconds, too coarse for an indexed count, so the query runs
        /// `repetitions` times in one shell and the time of the same shell running
        /// `SELECT 1` as often is taken off. The best of three such measurements.
        static func sqliteMillis(_ sqlite3: String, path: String, sql: String, arguments: [Value?], repetitions: Int) throws -> Double {
            var setup = ".parameter init\n"
            for (index, value) in arguments.enumerated() {
                let literal: String = switch value {
                case nil: "NULL"
                case .int(let i)?: String(i)
                case .double(let d)?: String(d)
                case .string(let s)?: "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
                default: "NULL"
                }
                setup += ".parameter set ?\(index + 1) \(literal)\n"
            }
            setup += ".output /dev/null\n"
            func wall(_ statement: String) throws -> Double {
                let script = setup + String(repeating: statement + ";\n", count: repetitions)
                let scriptPath = NSTemporaryDirectory() + "ingest-bench-\(UUID().uuidString).sql"
                try FileOpsCLI.write(script, to: scriptPath)
                defer { try? FileManager.default.removeItem(atPath: scriptPath) }
                let result = try ChildProcess.run(sqlite3, ["-readonly", path], standardInput: scriptPath)
                guard result.status == 0 else { throw CommandFailure("the sqlite3 shell failed on: \(statement)") }
                return result.seconds
            }
            var best = Double.infinity
            for _ in 0..<3 {
                let query = try wall(sql)
                let baseline = try wall("SELECT 1")
                best = min(best, max(0, query - baseline) / Double(repetitions) * 1000)
            }
            return best
        }
    }
}
