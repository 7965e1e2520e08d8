import ArgumentParser
import Foundation
import IngestJSON
import IngestStore

extension Ingest {
    struct BenchHierarchy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hierarchy",
            abstract: "Entity inheritance's layout (one table per hierarchy) beside a table per entity, on the same feed.",
            discussion: """
            Generates --records mixed GitHub-like events (a third each PushEvent, IssuesEvent \
            and another type) and imports them --runs times each into a SQLite store with \
            Pipelines/event-hierarchy.json (Event with subentities PushEvent and IssueEvent: one \
            table) and with Pipelines/typed-events.json (three unrelated entities: three \
            tables), each import its own process. Then times queries on both stores (median of \
            --runs, warm): what a user of each layout runs to get the same answer.

            Example:
              ingest bench hierarchy --records 200000 --runs 3
            """
        )

        @Option(help: "Events in the feed.")
        var records = 200_000

        @Option(help: "Timed runs of each import and query.")
        var runs = 3

        @Option(name: .customLong("pipelines"), help: "The directory holding event-hierarchy.json and typed-events.json.")
        var pipelines = "Pipelines"

        @Option(name: .customLong("work-dir"), help: "Where the feed and stores go.")
        var workDirectory = "/tmp/ingest-bench"

        func validate() throws {
            if records < 300 { throw ValidationError("--records must be at least 300") }
            if runs < 1 { throw ValidationError("--runs must be at least 1") }
        }

        func run() throws {
            let layouts = [("one table per hierarchy", "event-hierarchy.json"), ("a table per entity", "typed-events.json")]
            for (_, file) in layouts where !FileOpsCLI.exists("\(pipelines)/\(file)") {
                throw CommandFailure("\(pipelines)/\(file) not found: run from the repository (./run.sh bench hierarchy) or give --pipelines")
            }
            try FileOpsCLI.makeDirectory(workDirectory)
            let feed = "\(workDirectory)/events-\(records).ndjson"
            if !FileOpsCLI.exists(feed) { try Self.writeFeed(records, to: feed) }
            let me = ChildProcess.currentExecutable
            var rows: [[String]] = []
            var stores: [String] = []
            for (name, file) in layouts {
                let store = "\(workDirectory)/store-\(file.dropLast(5))-\(records).sqlite"
                var results: [ChildProcess.Result] = []
                for _ in 0..<runs {
                    for suffix in ["", "-wal", "-shm", ".rejects.ndjson", ".report.json"] { try? FileManager.default.removeItem(atPath: store + suffix) }
                    try? FileManager.default.removeItem(atPath: store + ".chunks")
                    let result = try ChildProcess.run(me, ["import", feed, "--pipeline", "\(pipelines)/\(file)", "--store", store, "--quiet"])
                    guard result.status == 0 else { throw CommandFailure("import with \(file) failed with exit status \(result.status)") }
                    results.append(result)
                }
                stores.append(store)
                let best = BenchSplit.best(results)
                let size = ["", "-wal"].compactMap { try? FileManager.default.attributesOfItem(atPath: store + $0)[.size] as? Int }.reduce(0, +)
                rows.append(["import: \(name)", Format.count(records), Format.fixed(best, places: 3), Format.count(Int(Double(records) / best)),
                             ByteCount.format(results.map(\.peakRSSBytes).max()!), ByteCount.format(size)])
            }
            print(Table.render(header: ["run", "records", "best s", "records/s", "peak RSS", "store"], rows: rows))
            print("")
            try queries(hierarchy: stores[0], flat: stores[1])
        }

        /// The same answers from both stores: the hierarchy asks its parent entity, the flat
        /// layout asks each of its three entities and merges.
        private func queries(hierarchy: String, flat: String) throws {
            let tree = try PersistentStoreCoordinator(existingStoreAt: hierarchy)
            let tables = try PersistentStoreCoordinator(existingStoreAt: flat)
            let kinds = ["PushEvent", "IssueEvent", "Event"]
            let busy = Value.int(Int64(records % 300 / 2))
            let cases: [(String, (ObjectContext) throws -> Int, (ObjectContext) throws -> Int)] = [
                ("count every event",
                 { try $0.count(for: FetchRequest("Event")) },
                 { context in try kinds.reduce(0) { $0 + (try context.count(for: FetchRequest($1))) } }),
                ("first 100 events by id",
                 { try Self.touch($0.fetch(FetchRequest("Event", sortDescriptors: [FetchSortDescriptor("id")], fetchLimit: 100))) },
                 { context in
                     let each = try kinds.flatMap { try context.fetch(FetchRequest($0, sortDescriptors: [FetchSortDescriptor("id")], fetchLimit: 100)) }
                     return try Self.touch(Array(each.sorted { $0.id!.stringValue! < $1.id!.stringValue! }.prefix(100)))
                 }),
                ("push events with commits >= 5",
                 { try Self.touch($0.fetch(FetchRequest("PushEvent", predicate: try QueryPredicate(format: "commits >= 5")))) },
                 { try Self.touch($0.fetch(FetchRequest("PushEvent", predicate: try QueryPredicate(format: "commits >= 5")))) }),
                ("one actor's events (to-many)",
                 { context in try Self.touch(try context.fetch("Actor", where: "id", equals: busy)[0].objects(forKey: "events")) },
                 { context in
                     let actor = try context.fetch("Actor", where: "id", equals: busy)[0]
                     return try Self.touch(["pushes", "issueEvents", "otherEvents"].flatMap { actor.objects(forKey: $0) })
                 }),
            ]
            var rows: [[String]] = []
            for (label, inTree, inTables) in cases {
                let (treeMs, treeCount) = try time(tree, inTree)
                let (tablesMs, tablesCount) = try time(tables, inTables)
                guard treeCount == tablesCount else {
                    throw CommandFailure("\(label): the layouts disagree (\(treeCount) against \(tablesCount) objects)")
                }
                rows.append([label, Format.count(treeCount), Format.fixed(treeMs, places: 3), Format.fixed(tablesMs, places: 3),
                             Format.fixed(treeMs / tablesMs, places: 2) + "×"])
            }
            print(Table.render(header: ["query", "objects", "hierarchy ms", "tables ms", "ratio"], rows: rows))
            print("median of \(runs) warm runs each; every object read (its id). The hierarchy asks Event once; the tables ask three entities and merge.")
        }

        private func time(_ coordinator: PersistentStoreCoordinator, _ body: (ObjectContext) throws -> Int) throws -> (Double, Int) {
            let context = ObjectContext(coordinator: coordinator, name: "bench")
            var times: [Double] = []
            var result = 0
            for _ in 0...runs {   // one warm-up
                context.performAndWait { context.reset() }
                let clock = ContinuousClock()
                let start = clock.now
                result = try context.performAndWait { try body(context) }
                times.append((clock.now - start).seconds * 1000)
            }
            let measured = times.dropFirst().sorted()
            return (measured[measured.count / 2], result)
        }

        /// Reads each object's id (what a fetch is for) and counts them.
        private static func touch(_ objects: [ManagedObject]) throws -> Int {
            for object in objects { _ = object.id }
            return objects.count
        }

        /// Events as GitHub's feed gives them: a third pushes, a third issues, a third other kinds.
        static func writeFeed(_ count: Int, to path: String) throws {
            var text = ""
            text.reserveCapacity(count * 160)
            for i in 0..<count {
                let actor = "\"actor\": {\"id\": \(i % 300), \"login\": \"user\(i % 300)\"}"
                switch i % 3 {
                case 0: text += "{\"id\": \"\(i)\", \"type\": \"PushEvent\", \(actor), \"payload\": {\"size\": \(i % 7), \"ref\": \"refs/heads/b\(i % 5)\"}}\n"
                case 1: text += "{\"id\": \"\(i)\", \"type\": \"IssuesEvent\", \(actor), \"payload\": {\"action\": \"opened\", \"issue\": {\"number\": \(i), \"title\": \"Issue \(i)\"}}}\n"
                default: text += "{\"id\": \"\(i)\", \"type\": \"\(["WatchEvent", "ForkEvent"][i % 2])\", \(actor)}\n"
                }
            }
            try FileOpsCLI.write(text, to: path)
        }
    }
}
