import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Random feeds whose keys repeat (of the records' own objects and of related ones, within
/// a chunk, across neighbouring chunks and across runs), under every `onConflict` rule and
/// both to-many updates of an ordered relationship, imported on both backends with 1, 2
/// and 4 workers, and by several processes killed at random moments and then continued:
/// each store ends exactly as a one-worker SQLite import leaves it, object by object and
/// link by link, with the same rejects for the same reasons. The server's log shows no
/// deadlock. `INGEST_FEED_ORDER_SEEDS=N` runs N seeds a case instead of 1, and every case on PostgreSQL;
/// to reproduce one PostgreSQL failure, `INGEST_FEED_ORDER_CASE=K` runs only `cases[K]` there and
/// `INGEST_FEED_ORDER_FROM=S` starts its seeds at S.
/// Cases run side by side (each has its stores, and on PostgreSQL a server, of its own).
@Suite struct FeedOrderPropertyTests {
    typealias Random = SplitMix64

    /// A case: the rule for posts, the rule for their authors, and the to-many update of
    /// the posts' ordered tags (nil: no tags, the batch path).
    struct Case: CustomTestStringConvertible, Sendable {
        var post: String
        var author: String
        var tags: String?
        /// Rows record their lineage (`"import": {"lineage": true}`): compared like any attribute.
        var lineage = false
        var testDescription: String { "posts \(post), authors \(author)" + (tags.map { ", tags \($0)" } ?? "") + (lineage ? ", lineage" : "") }
    }

    static let cases = [
        Case(post: "update", author: "update", lineage: true), Case(post: "replace", author: "keepExisting", lineage: true),
        Case(post: "keepExisting", author: "replace"), Case(post: "reject", author: "update", lineage: true),
        Case(post: "update", author: "reject"),
        Case(post: "update", author: "update", tags: "replace"), Case(post: "keepExisting", author: "update", tags: "merge", lineage: true),
        Case(post: "reject", author: "replace", tags: "replace"),
    ]

    static var seeds: Int { Int(ProcessInfo.processInfo.environment["INGEST_FEED_ORDER_SEEDS"] ?? "") ?? 1 }

    /// The cases PostgreSQL runs: each takes a server's databases and processes. Every rule
    /// once with `INGEST_STRESS` (all cases with `INGEST_FEED_ORDER_SEEDS` set); without it,
    /// three cases that between them use every rule and an ordered to-many update.
    static var postgresCases: [Case] {
        if let only = ProcessInfo.processInfo.environment["INGEST_FEED_ORDER_CASE"].flatMap(Int.init), cases.indices.contains(only) { return [cases[only]] }
        if ProcessInfo.processInfo.environment["INGEST_FEED_ORDER_SEEDS"] != nil { return cases }
        return Stress.pick([cases[0], cases[1], cases[3], cases[4], cases[6]], quick: [cases[1], cases[3], cases[6]])
    }

    /// `UpdateRuleTests`'s pipeline, its tags ordered.
    static func pipeline(_ test: Case) -> String {
        UpdateRuleTests.pipelineText(postRule: test.post, authorRule: test.author, tags: test.tags)
            .replacingOccurrences(of: #""inverse": "posts", "toMany": true } ]"#, with: #""inverse": "posts", "toMany": true, "ordered": true } ]"#)
            .replacingOccurrences(of: #""feed": { "ndjson": true },"#, with: test.lineage ? #""feed": { "ndjson": true }, "import": { "lineage": true },"# : #""feed": { "ndjson": true },"#)
    }

    /// Two feeds (two runs) of posts drawn from a few keys, so that they repeat within a chunk,
    /// in neighbouring chunks and across the runs; authors nested with some of their fields,
    /// or named by key alone; now and then an event by key alone (rejected: it has no name)
    /// or views that are not a number (rejected as it is mapped).
    static func feeds(seed: UInt64, records: Int) -> [[String]] {
        var random = Random(seed: seed)
        var lines: [String] = []
        for _ in 0..<records {
            var record: [String: Any] = ["id": "p\(random.below(records / 5))"]
            if random.below(6) != 0 { record["title"] = "t\(random.below(1_000))" }
            switch random.below(20) {
            case 0: record["views"] = "many"
            case 1, 2: break
            default: record["views"] = random.below(100)
            }
            switch random.below(6) {
            case 0: break
            case 1: record["author"] = random.below(6)
            default:
                var author: [String: Any] = ["id": random.below(6)]
                if random.below(4) != 0 { author["name"] = "n\(random.below(100))" }
                if random.below(3) == 0 { author["email"] = "e\(random.below(100))@x" }
                record["author"] = author
            }
            if random.below(25) == 0 { record["eventId"] = random.below(3) }
            if random.below(5) != 0 {
                let tags = ["a", "b", "c", "d", "e"].shuffled(using: &random).prefix(random.below(4))
                record["tags"] = tags.map { ["name": $0] }
            }
            let data = try! JSONSerialization.data(withJSONObject: record, options: [.sortedKeys])
            lines.append(String(decoding: data, as: UTF8.self))
        }
        let cut = records * 3 / 5
        return [Array(lines[..<cut]), Array(lines[cut...])]
    }

    /// Every object of every entity: its attributes, each to-one as the destination's
    /// attributes, each to-many as its destinations' (in order when ordered, else sorted).
    static func graph(_ coordinator: PersistentStoreCoordinator, _ model: Model) throws -> [String: [String]] {
        let context = ObjectContext(coordinator: coordinator, name: "compare")
        return try context.performAndWait {
            var all: [String: [String]] = [:]
            func describe(_ object: ManagedObject, _ entity: Entity) -> String {
                entity.attributes.map { object[$0.name].map { "\($0)" } ?? "nil" }.joined(separator: ",")
            }
            for entity in model.entities {
                all[entity.name] = try context.fetch(entity.name).map { object in
                    var cells = [describe(object, entity)]
                    for relationship in entity.relationships {
                        let destination = model.entity(relationship.destination)!
                        if relationship.isToMany {
                            let keys = object.objects(forKey: relationship.name).map { describe($0, destination) }
                            cells.append(relationship.name + "=[" + (relationship.isOrdered ? keys : keys.sorted()).joined(separator: ";") + "]")
                        } else {
                            cells.append(relationship.name + "=" + (object.object(forKey: relationship.name).map { describe($0, destination) } ?? "nil"))
                        }
                    }
                    return cells.joined(separator: " | ")
                }.sorted()
            }
            return all
        }
    }

    /// The rejects file's lines, each as chunk, index and reason (the file holds every run's, in order).
    static func sqliteRejects(_ report: ImportReport) throws -> [String] {
        guard let text = try? String(contentsOfFile: report.rejectsFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map { rejectKey(String($0)) }
    }

    /// Imports `feeds` one run after another into the SQLite store at `store`: each run's rejects, labelled by run.
    static func importRuns(_ feeds: [String], _ spec: PipelineSpec, store: String, workers: Int) throws -> [String] {
        var rejects: [String] = []
        var seen = 0
        for (run, feed) in feeds.enumerated() {
            let report = try Importer(spec: spec, options: Importer.Options(feed: feed, store: store, workers: workers, saveEvery: 3, chunkSize: 8)).run()
            let lines = try sqliteRejects(report)
            rejects += lines.dropFirst(seen).map { "run \(run + 1) " + $0 }
            seen = lines.count
        }
        return rejects.sorted()
    }

    static func rejectKey(_ line: String) -> String {
        let object = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        return "\(object["chunk"]!)/\(object["index"]!): \(object["reason"]!)"
    }

    static func postgresRejects(_ url: String) throws -> [String] {
        let rows = try PostgresConnection(try PostgresURL(url)).execute("SELECT run, record FROM _ingest_rejects")
        return (0..<rows.count).map { "run \(rows[$0, 0]!) " + rejectKey(rows[$0, 1]!) }.sorted()
    }

    struct Reference {
        var graph: [String: [String]]
        /// Per run, "run N chunk/index: reason".
        var rejects: [String]
    }

    /// One worker on SQLite, run after run: what every other import must give.
    static func reference(_ feeds: [String], _ spec: PipelineSpec, dir: TemporaryDirectory) throws -> Reference {
        let store = dir.file("reference.sqlite")
        let rejects = try importRuns(feeds, spec, store: store, workers: 1)
        return Reference(graph: try graph(try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true), spec.model),
                         rejects: rejects)
    }

    static func write(_ feeds: [[String]], seed: Int, dir: TemporaryDirectory) throws -> [String] {
        try feeds.enumerated().map { run, lines in
            try dir.write("feed-\(seed)-\(run + 1).ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        }
    }

    /// PostgreSQL's rejects against the reference's: the same records, for the same reasons.
    static func expectSameRejects(_ rejects: [String], _ reference: Reference, _ what: String) {
        #expect(rejects == reference.rejects, "\(what): \(Array(rejects.difference(from: reference.rejects)))")
    }

    static func expectEqual(_ got: [String: [String]], _ reference: Reference, _ what: String) {
        for (entity, rows) in reference.graph {
            let other = got[entity] ?? []
            #expect(other == rows, "\(what), \(entity): first difference \(zip(rows, other).first { $0 != $1 }.map { "\($0)\n vs \($1)" } ?? "in count \(rows.count) vs \(other.count)")")
        }
    }

    @Test(arguments: cases)
    func anySQLiteImportEndsAsOneWorkerDoes(test: Case) throws {
        let spec = try PipelineSpec.parse(Array(Self.pipeline(test).utf8))
        for seed in 0..<Self.seeds {
            let dir = try TemporaryDirectory()
            let feeds = try Self.write(Self.feeds(seed: UInt64(seed) &* 7_919 &+ UInt64(test.testDescription.utf8.count), records: 150), seed: seed, dir: dir)
            let reference = try Self.reference(feeds, spec, dir: dir)
            #expect(!reference.rejects.isEmpty, "the feed exercises rejects")
            for workers in [2, 4] {
                let store = dir.file("workers-\(workers).sqlite")
                let rejects = try Self.importRuns(feeds, spec, store: store, workers: workers)
                Self.expectEqual(try Self.graph(try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true), spec.model), reference,
                                 "\(workers) workers, seed \(seed)")
                #expect(rejects == reference.rejects, "\(workers) workers, seed \(seed)")
            }
            // Killed at a random moment of each run, then resumed (or imported again when the
            // kill came before the run was recorded: resume then says there is nothing to resume).
            var said: [String] = []
            let pipeline = dir.file("pipeline.json")
            try Self.pipeline(test).write(toFile: pipeline, atomically: true, encoding: .utf8)
            let store = dir.file("killed.sqlite")
            var random = Random(seed: UInt64(seed) + 99)
            for feed in feeds {
                let running = try IngestBinary.start(["import", feed, "--pipeline", pipeline, "--store", store, "--workers", "2",
                                                      "--chunk-size", "8", "--save-every", "3", "--quiet"])
                usleep(UInt32(50_000 + random.below(300_000)))
                if running.process.isRunning { kill(running.process.processIdentifier, SIGKILL) }
                let first = IngestBinary.finish(running)
                said.append("import: \(first.status) \(first.stderr)")
                guard first.status != 0 else { continue }
                var resumed = try IngestBinary.run(["resume", store, "--workers", "2"])
                said.append("resume: \(resumed.status) \(resumed.stderr)")
                // "nothing to resume: its last import, run N of FEED, is finished": done when FEED is this one.
                let lastWasThis = resumed.stdout.contains("nothing to resume") && resumed.stdout.contains(" of \(feed), is finished")
                // A resume that finished the run (3: with rejects; or every record rejected) is not
                // followed by another import: that would be a run of its own (lineage names it).
                let finished = resumed.status == 0 || resumed.status == 3 || resumed.stderr.contains("every record this run read was rejected")
                if !finished || (resumed.stdout.contains("nothing to resume") && !lastWasThis) {
                    // Killed before it recorded the run: nothing to resume, so imported again.
                    resumed = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store, "--workers", "2",
                                                    "--chunk-size", "8", "--save-every", "3", "--quiet"])
                    said.append("import again: \(resumed.status) \(resumed.stderr)")
                }
                // 3: some records rejected; when every record of the run is (a `reject` rule on a feed
                // of stored keys), the command says so and fails, as it does on the reference's feed.
                #expect(resumed.status == 0 || resumed.status == 3 || resumed.stderr.contains("every record this run read was rejected"),
                        "\(resumed.stderr)")
            }
            Self.expectEqual(try Self.graph(try PersistentStoreCoordinator(existingStoreAt: store, readOnly: true), spec.model), reference,
                             "killed and resumed, seed \(seed); the processes said: \(said)")
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")), arguments: postgresCases)
    func anyPostgreSQLImportEndsAsOneWorkerOnSQLiteDoes(test: Case) throws {
        let server = try PostgresServer()
        let spec = try PipelineSpec.parse(Array(Self.pipeline(test).utf8))
        for seed in (Int(ProcessInfo.processInfo.environment["INGEST_FEED_ORDER_FROM"] ?? "") ?? 0)..<Self.seeds {
            let dir = try TemporaryDirectory()
            let feeds = try Self.write(Self.feeds(seed: UInt64(seed) &* 7_919 &+ UInt64(test.testDescription.utf8.count), records: 150), seed: seed, dir: dir)
            let reference = try Self.reference(feeds, spec, dir: dir)
            // One process, 1, 2 and 4 workers; then 2 processes of 2 workers each.
            for (workers, processes) in [(1, 1), (2, 1), (4, 1), (2, 2)] {
                let url = try server.createDatabase("s\(seed)_w\(workers)_p\(processes)")
                let options = PostgresImportOptions(workers: workers, saveEvery: 3, chunkSize: 8)
                for feed in feeds {
                    let outcomes = try PostgresJoins.importRun(feed, pipeline: Array(Self.pipeline(test).utf8), url: url, options: options,
                                                               processes: processes)
                    #expect(outcomes.compactMap(\.failure) == [])
                }
                let what = "\(processes) processes of \(workers) workers, seed \(seed)"
                Self.expectEqual(try Self.graph(try PersistentStoreCoordinator(existingStoreAt: url, readOnly: true), spec.model), reference, what)
                Self.expectSameRejects(try Self.postgresRejects(url), reference, what)
            }
            // Three processes, one of them killed at a random moment of each run, then continued.
            let url = try server.createDatabase("s\(seed)_killed")
            let pipeline = dir.file("pipeline.json")
            try Self.pipeline(test).write(toFile: pipeline, atomically: true, encoding: .utf8)
            var random = Random(seed: UInt64(seed) + 7)
            for feed in feeds {
                let importing = ["import", feed, "--pipeline", pipeline, "--store", url, "--workers", "2", "--chunk-size", "8",
                                 "--save-every", "3", "--lease-seconds", "3", "--quiet"]
                var running = [try IngestBinary.start(importing)]
                usleep(150_000)
                for _ in 0..<2 { running.append(try IngestBinary.start(["join", url, "--workers", "2", "--quiet"])) }
                usleep(UInt32(random.below(400_000)))
                let victim = running[random.below(running.count)].process
                if victim.isRunning { kill(victim.processIdentifier, SIGKILL) }
                _ = running.map(IngestBinary.finish)
                // Continued until the feed's run is finished (one import, as the issue's user would).
                for _ in 0..<3 where try !Self.finished(feed, url) {
                    let outcome = try IngestBinary.run(importing)
                    #expect(outcome.status == 0 || outcome.status == 3, "\(outcome.stderr)")
                }
                #expect(try Self.finished(feed, url))
            }
            Self.expectEqual(try Self.graph(try PersistentStoreCoordinator(existingStoreAt: url, readOnly: true), spec.model), reference,
                             "3 processes, one killed, seed \(seed)")
            Self.expectSameRejects(try Self.postgresRejects(url), reference, "killed, seed \(seed)")
        }
        let log = try String(contentsOfFile: server.logFile, encoding: .utf8)
        #expect(!log.contains("deadlock detected"))
    }

    /// Whether the run of `feed` is recorded finished in the store at `url`.
    static func finished(_ feed: String, _ url: String) throws -> Bool {
        let connection = try PostgresConnection(try PostgresURL(url))
        guard try connection.execute("SELECT to_regclass('_ingest_runs') IS NOT NULL")[0, 0] == "t" else { return false }
        let rows = try connection.execute("SELECT state FROM _ingest_runs WHERE record::json->>'feed' = $1 ORDER BY run DESC LIMIT 1", [feed])
        return rows.count == 1 && rows[0, 0] == "finished"
    }
}
