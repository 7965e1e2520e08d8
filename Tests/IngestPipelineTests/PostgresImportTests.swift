import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// Imports into a PostgreSQL store, on a real server each test starts (`PostgresServer`):
/// the end state must be what the same import leaves in SQLite, row for row.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresImportTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    /// Every row of every entity, normalized by attribute type, sorted: what two stores must share.
    static func sqliteRows(_ path: String, _ model: Model) throws -> [String: [String]] {
        let db = try SQLiteFile(path, readOnly: true)
        var all: [String: [String]] = [:]
        for entity in model.entities {
            var columns = entity.attributes.map { "t.\"\($0.name)\"" }
            var joins = ""
            var types = entity.attributes.map(\.type)
            for (number, relationship) in entity.relationships.enumerated() where !relationship.isToMany {
                let destination = model.entity(relationship.destination)!
                let key = destination.uniquenessConstraints.first?.first ?? "_pk"
                joins += " LEFT JOIN \"\(destination.name)\" d\(number) ON d\(number)._pk = t.\"_\(relationship.name)\""
                columns.append("d\(number).\"\(key)\"")
                types.append(destination.attribute(key)?.type ?? .int64)
            }
            let rows = try db.rows("SELECT \(columns.isEmpty ? "1" : columns.joined(separator: ", ")) FROM \"\(entity.name)\" t\(joins)")
            all[entity.name] = rows.map { row in
                (0..<columns.count).map { index in normalized(row[index], types[index]) }.joined(separator: "|")
            }.sorted()
        }
        return all
    }

    static func postgresRows(_ url: String, _ model: Model) throws -> [String: [String]] {
        let store = try PostgresStore(url: try PostgresURL(url), model: model)
        let connection = try store.connect()
        var all: [String: [String]] = [:]
        for entity in model.entities {
            var types = entity.attributes.map(\.type)
            for relationship in entity.relationships where !relationship.isToMany {
                let destination = model.entity(relationship.destination)!
                types.append(destination.uniquenessConstraints.first.flatMap { destination.attribute($0[0])?.type } ?? .int64)
            }
            all[entity.name] = try store.rows(of: entity.name, connection).map { row in
                row.enumerated().map { normalized($1, types[$0]) }.joined(separator: "|")
            }.sorted()
        }
        return all
    }

    static func normalized(_ text: String?, _ type: AttributeType) -> String {
        guard let text else { return "NULL" }
        switch type {
        case .double: return Double(text).map { "\($0)" } ?? text
        case .date: return Double(text).map { String(format: "%.6f", $0) } ?? text
        case .bool: return text == "1" || text == "t" || text == "true" ? "1" : "0"
        default: return text
        }
    }

    /// Expects each entity's rows on PostgreSQL to be its rows on SQLite, naming the first difference.
    static func expectSameRows(_ sqlite: [String: [String]], _ postgres: [String: [String]],
                               sourceLocation: SourceLocation = #_sourceLocation) {
        for (entity, rows) in sqlite {
            let other = postgres[entity] ?? []
            #expect(other == rows, "\(entity): first difference \(zip(rows, other).first { $0 != $1 }.map { "\($0)\n vs \($1)" } ?? "in count")",
                    sourceLocation: sourceLocation)
        }
    }

    /// Imports `feeds` one after another into SQLite (the importer) and PostgreSQL (start and join).
    static func importBoth(_ feeds: [String], pipeline: String, url: String, dir: TemporaryDirectory,
                           workers: Int = 1, saveEvery: Int = 100, chunkSize: Int = 100,
                           rowsPerBinaryCopy: Int? = nil) throws -> (sqlite: [String: [String]], postgres: [String: [String]], joins: [PostgresJoin.Report]) {
        let spec = try PipelineSpec.parse(Array(pipeline.utf8))
        var joins: [PostgresJoin.Report] = []
        for feed in feeds {
            _ = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: workers,
                                                                   saveEvery: saveEvery, chunkSize: chunkSize)).run()
            var options = PostgresImportOptions(workers: workers, saveEvery: saveEvery, chunkSize: chunkSize)
            options.rowsPerBinaryCopy = rowsPerBinaryCopy
            let started = try PostgresImport.start(feed: feed, pipeline: Array(pipeline.utf8), url: try PostgresURL(url), options: options)
            joins.append(try PostgresJoin(url: try PostgresURL(url), options: options).run(run: started.run))
        }
        return (try sqliteRows(dir.file("store.sqlite"), spec.model), try postgresRows(url, spec.model), joins)
    }

    /// New rows go to PostgreSQL in COPY's binary format when every cell has one: each
    /// attribute type, its edges and its text forms end as on SQLite (and as the text
    /// format stored them); a value out of a column's range goes as text for the server
    /// to judge, and only its record is rejected.
    @Test func everyAttributeTypeEndsAsOnSQLiteThroughTheBinaryCopy() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let pipeline = """
            { "model": { "entities": [ { "name": "T", "attributes": [
                { "name": "id", "type": "string", "optional": false }, { "name": "s", "type": "string" },
                { "name": "i16", "type": "int16" }, { "name": "i32", "type": "int32" }, { "name": "i64", "type": "int64" },
                { "name": "d", "type": "double" }, { "name": "b", "type": "bool" }, { "name": "t", "type": "date" },
                { "name": "dec", "type": "decimal" }, { "name": "u", "type": "uuid" }, { "name": "bin", "type": "binary" } ],
              "unique": [["id"]] } ] },
              "feed": { "ndjson": true }, "record": "T",
              "mappings": { "T": { "attributes": { "id": "id", "s": "s", "i16": "i16", "i32": "i32", "i64": "i64", "d": "d", "b": "b",
                                                   "t": "t", "dec": "dec", "u": "u", "bin": "bin" } } } }
            """
        let feed = try dir.write("types.ndjson", Array(#"""
            {"id":"a","s":"plain","i16":32767,"i32":-2147483648,"i64":9223372036854775807,"d":-2.5,"b":true,"t":"2024-02-29T23:59:59.123456Z","dec":123456789012345678901234567890,"u":"0F6E2D5C-3A1B-4C2D-9E8F-1A2B3C4D5E6F","bin":"AAEC/w=="}
            {"id":"b","s":"tab\tnew\nline back\\slash \"quote\" é 😀","i16":-32768,"i32":2147483647,"i64":-9223372036854775808,"d":1e-300,"b":false,"t":"1969-07-20T20:17:40Z","dec":"-0.5","u":null,"bin":""}
            {"id":"c","s":"","i16":"12","i32":"-7","i64":"42","d":47,"b":"true","t":"2001-01-01T00:00:00Z","dec":1e400}
            {"id":"d","s":null,"i16":null,"i32":null,"i64":null,"d":null,"b":null,"t":null}
            {"id":"e","d":0.1,"t":"9999-12-31T23:59:59.999999Z"}
            {"id":"f","d":123456789.123456789,"t":"0001-01-01T00:00:00Z","i64":1.0}
            {"id":"g","d":-0.0}

            """#.utf8))
        let stores = try Self.importBoth([feed], pipeline: pipeline, url: server.url, dir: dir)
        // Record e's date is past the stores' range (year 9999, end of day): rejected on both.
        // Record g's -0.0 is 0.0 on both (SQLite keeps no sign on a zero).
        #expect(stores.sqlite["T"]?.map { $0.prefix(1) } == ["a", "b", "c", "d", "f", "g"], "\(stores.sqlite)")
        #expect(stores.postgres["T"] == stores.sqlite["T"], "\(stores.postgres) vs \(stores.sqlite)")
        #expect(stores.joins[0].records == 6 && stores.joins[0].rejected == 1)
    }

    @Test func aGeneratedFeedEndsAsOnSQLiteWithEveryColumnAndLink() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 1_500, seed: 7).write(to: feed)
        let stores = try Self.importBoth([feed], pipeline: String(contentsOfFile: Self.photos, encoding: .utf8), url: server.url, dir: dir,
                                         workers: 2, saveEvery: 70, chunkSize: 300)
        #expect(stores.sqlite["Photo"]?.count == 1_500)
        Self.expectSameRows(stores.sqlite, stores.postgres)
        #expect(stores.joins[0].runFinished && stores.joins[0].records == 1_500 && stores.joins[0].chunks == 5)
        // The object graph reads the imported PostgreSQL store as it reads the SQLite one.
        let onSQLite = try PersistentStoreCoordinator(existingStoreAt: dir.file("store.sqlite"))
        let onPostgres = try PersistentStoreCoordinator(existingStoreAt: server.url)
        let fetches = [
            DictionaryFetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "views > 300 AND whoTook.name BEGINSWITH[cd] 'a'"),
                                         sortDescriptors: [FetchSortDescriptor("views", ascending: false), FetchSortDescriptor("id")], fetchLimit: 40),
                            properties: ["id", "title", "uploadDate", "latitude", "views", "whoTook.name"].map(FetchProperty.keyPath)),
            DictionaryFetch(FetchRequest("Photo", predicate: try QueryPredicate(format: "title MATCHES[c] '.*[aeiou]{2}.*' OR title LIKE[cd] '*e?a*'"),
                                         sortDescriptors: [FetchSortDescriptor("whoTook.name", comparison: .caseInsensitive)]),
                            properties: [.keyPath("whoTook.name"), .aggregate(name: "photos", function: .count, keyPath: nil),
                                         .aggregate(name: "views", function: .avg, keyPath: "views"), .aggregate(name: "latest", function: .max, keyPath: "uploadDate")],
                            groupBy: ["whoTook.name"], having: try QueryPredicate(format: "photos > 1")),
            DictionaryFetch(FetchRequest("Photographer", predicate: try QueryPredicate(format: "photos.@count >= 3 AND ANY photos.views < 100"),
                                         sortDescriptors: [FetchSortDescriptor("name", comparison: .localizedStandard), FetchSortDescriptor("id")]),
                            properties: [.keyPath("id"), .keyPath("name")]),
        ]
        for fetch in fetches {
            let sqliteContext = ObjectContext(coordinator: onSQLite)
            let postgresContext = ObjectContext(coordinator: onPostgres)
            let expected = try sqliteContext.performAndWait { try sqliteContext.fetchDictionaries(fetch) }
            let found = try postgresContext.performAndWait { try postgresContext.fetchDictionaries(fetch) }
            #expect(!expected.isEmpty)
            #expect(found == expected, "\(fetch.request.predicate.map { "\($0)" } ?? "")")
        }
    }

    @Test(arguments: [1, 100])
    func updateRulesEndAsOnSQLite(saveEvery: Int) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try dir.write("first.ndjson", Array("""
            {"id":"p1","title":"first","views":5,"author":2}
            {"id":"p2","author":{"id":2,"name":"Bea","email":"b@x"}}
            {"id":"p1","title":"second"}
            {"id":"p3","author":{"id":2,"name":"Bea Renamed"},"eventId":9}
            {"id":"p2","title":null}
            {"id":"p4","author":{"id":5,"name":"Eve"}}
            {"id":"p2"}

            """.utf8))
        let second = try dir.write("second.ndjson", Array("""
            {"id":"p4","title":"later","author":{"id":5,"email":"e@x"}}
            {"id":"p1","views":7,"author":{"id":6,"name":"Fay"}}
            {"id":"p5","title":"new"}

            """.utf8))
        for (post, author) in [("update", "update"), ("replace", "replace"), ("keepExisting", "keepExisting"), ("update", "replace")] {
            let database = "rules_\(post)_\(author)_\(saveEvery)".lowercased()
            let url = try server.createDatabase(database)
            let rulesDir = try TemporaryDirectory()
            let stores = try Self.importBoth([first, second], pipeline: UpdateRuleTests.pipelineText(postRule: post, authorRule: author),
                                             url: url, dir: rulesDir, saveEvery: saveEvery, chunkSize: 4)
            #expect(stores.postgres == stores.sqlite, "onConflict \(post)/\(author), save every \(saveEvery)")
            #expect(stores.postgres["Event"] == [], "event 9 is given by key alone and its name is required: p3 is rejected")
        }
    }

    /// A server restart ends the import's sessions: the process stops saying how to go
    /// on, and `ingest join` finishes the run as a clean import would.
    @Test func aServerRestartMidImportIsContinuedByJoin() throws {
        let server = try PostgresServer()  // restarted below: a server of its own
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 20_000, seed: 3).write(to: feed)
        let running = try IngestBinary.start(["import", feed, "--pipeline", Self.photos, "--store", server.url, "--workers", "1",
                                              "--save-every", "100", "--chunk-size", "500", "--quiet"])
        let url = try PostgresURL(server.url)
        while running.process.isRunning, ((try? PostgresStatus.read(url: url))?.runs.last?.recordsDone ?? 0) < 1_000 { usleep(20_000) }
        try server.restart()
        let stopped = IngestBinary.finish(running)
        #expect(stopped.status == 1, "\(stopped.stderr)")
        #expect(stopped.stderr.hasSuffix("the run is kept as far as it was saved: continue with: ingest join \(ShellWord.quoted(url.description))\n"), "\(stopped.stderr)")
        let status = try IngestBinary.run(["status", server.url])
        #expect(status.stdout.contains("run 1: interrupted (no process is importing it; continue with: ingest join \(ShellWord.quoted(url.description)))"), "\(status.stdout)")
        let joined = try IngestBinary.run(["join", server.url, "--quiet"])
        #expect(joined.status == 0, "\(joined.stderr)")
        let spec = try PipelineSpec.load(path: Self.photos)
        _ = try Importer(spec: spec, options: .init(feed: feed, store: dir.file("clean.sqlite"))).run()
        #expect(try Self.postgresRows(server.url, spec.model) == Self.sqliteRows(dir.file("clean.sqlite"), spec.model))
    }

    /// `--abandon-run` cannot leave a run that a live process writes (its saves would go on
    /// over the new run's); once that process is gone (its heartbeat past the lease) the
    /// run is left, and a save it tries after waking is refused: the new run's updates stay.
    @Test(.enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func abandoningARunThatALiveProcessWritesIsRefusedAndItsLateSavesAreFenced() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let bytes = FeedGenerator(records: 20_000, seed: 5).bytes()
        let first = try dir.write("first.json", bytes)
        let renamed = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: #""title":""#, with: #""title":"renamed "#)
        let second = try dir.write("second.json", Array(renamed.utf8))
        let url = try PostgresURL(server.url)
        let running = try IngestBinary.start(["import", first, "--pipeline", Self.photos, "--store", server.url, "--workers", "1",
                                              "--save-every", "50", "--chunk-size", "500", "--lease-seconds", "2", "--quiet"])
        let pid = running.process.processIdentifier
        while running.process.isRunning, ((try? PostgresStatus.read(url: url))?.runs.last?.recordsDone ?? 0) < 500 { usleep(20_000) }
        let refused = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", server.url, "--abandon-run", "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("is being imported by another process (run 1 of \(first), by 1 live process(es): "), "\(refused.stderr)")
        #expect(refused.stderr.contains(" pid \(pid)). Wait for it or stop it"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("--abandon-run"), "no advice that cannot work: \(refused.stderr)")

        // Stopped between saves its run can be left; stopped mid-save it holds the run, and the
        // refusal says so (no wait): let it run a moment and stop it again.
        var abandoned: IngestBinary.Outcome?
        for round in 0..<20 {
            kill(pid, SIGSTOP)
            Thread.sleep(forTimeInterval: 2.5)
            if round == 0 {
                // Past its lease, stopped, not dead (found by probing: status called it dead).
                let shown = try IngestBinary.run(["status", server.url])
                #expect(shown.stdout.contains("stopped by a signal (no heartbeat for ") && shown.stdout.contains("kill -CONT \(pid) continues it"),
                        "\(shown.stdout)")
            }
            let attempt = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", server.url, "--abandon-run", "--quiet"])
            if attempt.status == 0 {
                abandoned = attempt
                break
            }
            #expect(attempt.stderr.contains("is stopped in the middle of a save and holds it; end that process, then import again"), "\(attempt.stderr)")
            kill(pid, SIGCONT)
            usleep(useconds_t(1_000 * Int.random(in: 5...40)))
        }
        #expect(abandoned != nil, "the run was left once its process stopped between saves")
        kill(pid, SIGCONT)
        let late = IngestBinary.finish(running)
        #expect(late.status == 1)
        #expect(late.stderr.contains("run 1 was abandoned by another import (--abandon-run) while this process imported it"), "\(late.stderr)")
        let titles = try IngestBinary.run(["query", server.url, "Photo", "--where", "NOT title BEGINSWITH 'renamed '", "--count"])
        #expect(titles.stdout == "0\n", "every title the new run wrote stays: \(titles.stdout)\(titles.stderr)")
        #expect(try IngestBinary.run(["query", server.url, "Photo", "--count"]).stdout == "20000\n")
    }

    /// Issue 19's feeds on PostgreSQL: a member named by digits, and the repeat of a feed
    /// whose entity has no key (nothing to do, unless --again).
    @Test func digitNamesAndARepeatOfAKeylessFeedAsOnSQLite() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try dir.write("readings.json", Array(#"[{"sensor":"a","1962":5},{"sensor":"b","1962":6}]"#.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        let pipeline = try dir.write("pipeline.json", Array(inference.text.utf8))
        #expect(try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", server.url, "--quiet"]).status == 0)
        let again = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", server.url])
        #expect(again.status == 0 && again.stdout.hasSuffix("nothing to do (Reading has no uniqueness key: importing the feed again would add its rows again). Pass --again to import it anyway\n"),
                "\(again.stdout)\(again.stderr)")
        #expect(try IngestBinary.run(["query", server.url, "Reading", "--sort", "f1962", "--fields", "sensor,f1962", "--format", "csv"]).stdout
                == "sensor,f1962\r\na,5\r\nb,6\r\n")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", server.url, "--again", "--quiet"]).status == 0)
        #expect(try IngestBinary.run(["query", server.url, "Reading", "--count"]).stdout == "4\n")
    }

    @Test func anEmptyStoreSaysNoImportHasRun() throws {
        let server = try PostgresServer.database()
        _ = try PostgresStore(url: try PostgresURL(server.url), model: try PipelineSpec.load(path: Self.photos).model)
        let status = try IngestBinary.run(["status", server.url])
        let url = try PostgresURL(server.url)
        #expect(status.status == 0 && status.stdout == "\(url): no import has run yet (0 runs)\n", "\(status.stdout)")
    }

    /// Two processes (two workers each) write batches at the same moment that share new
    /// related keys (photographers several chunks make first) and stored ones (a second
    /// feed updating photos and photographers of the first): the store ends exactly as
    /// one SQLite import after the other leaves it, every row and link.
    @Test func twoProcessesWritingSharedNewAndStoredKeysAtOnceEndAsSequentialImports() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = dir.file("first.json")
        try FeedGenerator(records: 3_000, seed: 1).write(to: first)
        let second = dir.file("second.json")
        try FeedGenerator(records: 6_000, seed: 2).write(to: second)
        let text = try String(contentsOfFile: Self.photos, encoding: .utf8)
        let spec = try PipelineSpec.parse(Array(text.utf8))
        let url = try PostgresURL(server.url)
        for feed in [first, second] {
            _ = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1)).run()
            let options = PostgresImportOptions(workers: 2, saveEvery: 100, chunkSize: 300)
            let started = try PostgresImport.start(feed: feed, pipeline: Array(text.utf8), url: url, options: options)
            let reports = Mutex<[PostgresJoin.Report]>([])
            let failures = Mutex<[String]>([])
            let group = DispatchGroup()
            for _ in 0..<2 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    do {
                        let report = try PostgresJoin(url: url, options: options).run(run: started.run)
                        reports.withLock { $0.append(report) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            group.wait()
            #expect(failures.withLock { $0 } == [])
            #expect(reports.withLock { $0.reduce(0) { $0 + $1.records } } == (feed == first ? 3_000 : 6_000), "every record once")
        }
        let sqlite = try Self.sqliteRows(dir.file("store.sqlite"), spec.model)
        let postgres = try Self.postgresRows(server.url, spec.model)
        #expect(postgres["Photo"]?.count == sqlite["Photo"]?.count && (sqlite["Photo"]?.count ?? 0) > 6_000, "new and stored photos both")
        Self.expectSameRows(sqlite, postgres)
        #expect(try PostgresStatus.check(url: url) == [])
    }

    /// Every pair of rules (`UpdateRuleCombinationTests`'s feeds) ends on PostgreSQL as on SQLite.
    @Test func everyPairOfRulesEndsAsOnSQLite() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try dir.write("first.ndjson", Array((UpdateRuleCombinationTests.first.joined(separator: "\n") + "\n").utf8))
        let second = try dir.write("second.ndjson", Array((UpdateRuleCombinationTests.second.joined(separator: "\n") + "\n").utf8))
        for post in UpdateRuleCombinationTests.rules {
            for author in UpdateRuleCombinationTests.rules {
                let url = try server.createDatabase("pair_\(post)_\(author)".lowercased())
                let stores = try Self.importBoth([first, second], pipeline: UpdateRuleTests.pipelineText(postRule: post, authorRule: author),
                                                 url: url, dir: try TemporaryDirectory(), saveEvery: 2)
                #expect(stores.postgres == stores.sqlite, "onConflict \(post)/\(author)")
            }
        }
    }

    @Test func aRecordPostgreSQLCannotHoldIsRejectedWithItsReasonAndTheRunGoesOn() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(#"""
            {"id":"p1","title":"fine"}
            {"id":"p2","title":"nul \u0000 inside"}
            {"id":"p3","views":"many"}
            {"id":"p4","title":"fine too"}

            """#.utf8))
        let started = try PostgresImport.start(feed: feed, pipeline: Array(UpdateRuleTests.pipelineText().utf8), url: try PostgresURL(server.url),
                                               options: PostgresImportOptions(saveEvery: 10))
        let report = try PostgresJoin(url: try PostgresURL(server.url), options: PostgresImportOptions(workers: 1)).run(run: started.run)
        #expect(report.records == 2 && report.rejected == 2 && report.runFinished)
        let status = try PostgresStatus.read(url: try PostgresURL(server.url))
        #expect(status.runs.last?.rejected == 2)
        #expect(status.rejects.count == 2)
        #expect(status.rejects.first?.contains("PostgreSQL text cannot hold the character U+0000") == true, "\(status.rejects)")
        #expect(status.rejects.first?.contains(#""chunk":1,"index":1"#) == true)
        // The mistyped value is rejected with the very reason the SQLite import gives.
        let sqlite = try Importer(spec: try UpdateRuleTests.spec(), options: Importer.Options(feed: feed, store: dir.file("store.sqlite"))).run()
        let sqliteReject = try String(contentsOfFile: sqlite.rejectsFile, encoding: .utf8).split(separator: "\n").first { $0.contains(#""index":2"#) }
        let reason = try #require(sqliteReject.flatMap { line in line.range(of: #""reason":"[^"]*""#, options: .regularExpression).map { String(line[$0]) } })
        #expect(status.rejects.last?.contains(reason) == true, "\(status.rejects) vs \(reason)")
        #expect(status.counts["Post"] == 2)
    }

    /// A batch the server refuses for its data is written again record by record, each
    /// behind a savepoint: only the record at fault is rejected, with the server's reason,
    /// and the others end as written in one go, new and stored related objects included
    /// (the staging tables are emptied between the records' writes, not after every batch).
    @Test func aBatchTheServerRefusesIsWrittenRecordByRecordAndOnlyTheRecordAtFaultIsRejected() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let url = try PostgresURL(server.url)
        func run(_ name: String, _ lines: String) throws -> PostgresJoin.Report {
            let feed = try dir.write(name, Array(lines.utf8))
            let started = try PostgresImport.start(feed: feed, pipeline: Array(UpdateRuleTests.pipelineText().utf8), url: url,
                                                   options: PostgresImportOptions(saveEvery: 10))
            return try PostgresJoin(url: url, options: PostgresImportOptions(workers: 1)).run(run: started.run)
        }
        let first = try run("first.ndjson", """
            {"id":"p1","title":"one","author":{"id":1,"name":"Al"}}
            {"id":"p2","title":"two","author":{"id":2,"name":"Bo"}}

            """)
        #expect(first.records == 2 && first.rejected == 0)
        // A rule only the server knows: the whole batch is refused (SQLSTATE 23514) the first time.
        _ = try server.psql(["-c", #"ALTER TABLE "Post" ADD CONSTRAINT views_not_negative CHECK (views >= 0)"#])
        let second = try run("second.ndjson", """
            {"id":"p3","title":"three","author":{"id":3,"name":"Cy"}}
            {"id":"p4","views":-1,"author":{"id":4,"name":"Di"}}
            {"id":"p1","title":"one again","author":{"id":1,"name":"Al renamed"}}
            {"id":"p5","author":{"id":3,"name":"Cy"}}
            {"id":"p2","title":"two again","views":7}
            {"id":"p6","title":"six","author":{"id":1,"name":"Al at last"}}

            """)
        #expect(second.records == 5 && second.rejected == 1, "\(second)")
        let status = try PostgresStatus.read(url: url)
        #expect(status.rejects.count == 1)
        #expect(status.rejects.first?.contains("views_not_negative") == true && status.rejects.first?.contains(#""index":1"#) == true,
                "\(status.rejects)")
        let rows = try Self.postgresRows(server.url, try UpdateRuleTests.spec().model)
        #expect(rows["Post"] == ["p1|one again|0|1|NULL", "p2|two again|7|2|NULL", "p3|three|0|3|NULL", "p5|NULL|0|3|NULL", "p6|six|0|1|NULL"], "\(rows)")
        #expect(rows["Author"] == ["1|Al at last|NULL", "2|Bo|NULL", "3|Cy|NULL"], "\(rows)")
    }

    /// Pipelines the batch path cannot write (a to-many mapping, the reject rule) take the
    /// object path on PostgreSQL too: contexts on the PostgreSQL store, each save holding
    /// the chunk's marker, its rejects and the process's counts.
    @Test func objectPathPipelinesEndAsOnSQLiteLinksAndRejectsIncluded() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try dir.write("first.ndjson", Array("""
            {"id":"p1","title":"first","author":{"id":2,"name":"Bea"},"tags":[{"name":"a"},{"name":"b"}]}
            {"id":"p2","title":"x","tags":[{"name":"b"}]}
            {"id":"p1","title":"second","tags":[{"name":"b"},{"name":"c"}]}
            {"id":"p3","views":"many"}
            {"id":"p4","author":{"id":2,"name":"Bea Other"},"tags":[]}
            {"id":"p5","title":"caf\u{E9}","tags":[{"name":"d"},{"name":"a"}]}

            """.utf8))
        let second = try dir.write("second.ndjson", Array("""
            {"id":"p2","title":"later","tags":[{"name":"e"}]}
            {"id":"p6","author":{"id":7,"name":"Cy"},"tags":[{"name":"a"}]}
            {"id":"p1","views":9}

            """.utf8))
        for (post, tags) in [("update", "merge"), ("replace", "replace"), ("reject", "merge")] {
            let url = try server.createDatabase("objects_\(post)_\(tags)")
            let rulesDir = try TemporaryDirectory()
            let stores = try Self.importBoth([first, second], pipeline: UpdateRuleTests.pipelineText(postRule: post, tags: tags),
                                             url: url, dir: rulesDir, saveEvery: 2, chunkSize: 3)
            #expect(stores.postgres == stores.sqlite, "onConflict \(post), tags \(tags)")
            // p3's views are not a number: rejected on both. Under reject, so are p1's and p2's later records (and tags c, e).
            #expect(stores.postgres["Post"]?.count == 5 && stores.postgres["Tag"]?.count == (post == "reject" ? 3 : 5), "\(post): \(stores.postgres["Tag"] ?? [])")
            // The links of the many-to-many, read through the object graph on each store.
            func tagsByPost(_ coordinator: PersistentStoreCoordinator) throws -> [String: [String]] {
                let context = ObjectContext(coordinator: coordinator)
                return try context.performAndWait {
                    var links: [String: [String]] = [:]
                    for post in try context.fetch("Post") {
                        links[post["id"]!.stringValue!] = post.objects(forKey: "tags").compactMap { $0["name"]?.stringValue }.sorted()
                    }
                    return links
                }
            }
            let onSQLite = try tagsByPost(try PersistentStoreCoordinator(existingStoreAt: rulesDir.file("store.sqlite")))
            let onPostgres = try tagsByPost(try PersistentStoreCoordinator(existingStoreAt: url))
            // Under reject, p1's second record differs from the stored p1: rejected with its tags.
            let p1 = post == "reject" ? ["a", "b"] : tags == "merge" ? ["a", "b", "c"] : ["b", "c"]
            #expect(onPostgres == onSQLite && onSQLite["p1"] == p1, "\(onPostgres) vs \(onSQLite)")
            // Rejects: the same records, for the same reasons.
            let rejects = try PostgresConnection(try PostgresURL(url)).execute("SELECT record FROM _ingest_rejects ORDER BY run, chunk, index")
            let postgresReasons = (0..<rejects.count).map { Self.reason(rejects[$0, 0]!) }
            let sqliteReasons = try String(contentsOfFile: rulesDir.file("store.sqlite") + ".rejects.ndjson", encoding: .utf8)
                .split(separator: "\n").map { Self.reason(String($0)) }
            #expect(postgresReasons == sqliteReasons && !postgresReasons.isEmpty, "\(postgresReasons) vs \(sqliteReasons)")
        }
    }

    /// A reject line's run-independent part: its record number and reason.
    /// Runs `sql` with psql on `database` of `server` (the helper's own runs on `ingest`).
    static func psql(_ server: PostgresServer, database: String, _ sql: String) throws -> String {
        try server.psql(["-d", database, "-c", sql])
    }

    static func reason(_ line: String) -> String {
        let record = line.range(of: #""record":[0-9]+"#, options: .regularExpression).map { String(line[$0]) } ?? "?"
        let reason = line.range(of: #""reason":"[^"]*""#, options: .regularExpression).map { String(line[$0]) } ?? "?"
        return record + " " + reason
    }

    @Test func storedChunksAreCompressedOldPlainOnesReadAndADamagedOneIsRefusedByName() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 900, seed: 12).write(to: feed)
        let pipeline = try String(contentsOfFile: Self.photos, encoding: .utf8)
        let url = try PostgresURL(server.url)
        let options = PostgresImportOptions(workers: 1, saveEvery: 100, chunkSize: 300)
        let started = try PostgresImport.start(feed: feed, pipeline: Array(pipeline.utf8), url: url, options: options)
        let connection = try PostgresConnection(url)
        let sizes = try connection.execute("""
            SELECT count(*), count(*) FILTER (WHERE substring(bytes FROM 1 FOR 4) = '\\x28b52ffd'::bytea), sum(octet_length(bytes))
            FROM _ingest_chunks WHERE run = $1
            """, [String(started.run)])
        #expect(sizes[0, 0] == "3" && sizes[0, 1] == "3", "every stored chunk is one zstd frame")
        var plain: [[UInt8]] = []
        var stored: [[UInt8]] = []
        for number in 1...3 {
            let bytes = try #require(try connection.fetchBytes("SELECT bytes FROM _ingest_chunks WHERE run = $1 AND number = $2",
                                                               [String(started.run), String(number)]))
            stored.append(bytes)
            plain.append(try #require(ChunkCompression.decompress(bytes)))
        }
        #expect(Int(sizes[0, 2]!)! * 3 < plain.reduce(0) { $0 + $1.count }, "compressed to under a third")
        // Chunk 1 as an earlier version stored it (plain NDJSON); chunk 2 damaged in its middle.
        try connection.execute("UPDATE _ingest_chunks SET bytes = $3 WHERE run = $1 AND number = $2",
                               [String(started.run), "1"], bytes: plain[0])
        var damaged = stored[1]
        damaged[damaged.count / 2] ^= 0x55
        try connection.execute("UPDATE _ingest_chunks SET bytes = $3 WHERE run = $1 AND number = $2",
                               [String(started.run), "2"], bytes: damaged)
        #expect(throws: ImportError("chunk 2 of run \(started.run), as stored in \(connection.target), is not the chunk the split registered (its checksum differs): it was damaged in the database, or the chunk file it was stored from changed after the split; no process imports it as it is")) {
            _ = try PostgresJoin(url: url, options: options).run(run: started.run)
        }
        try connection.execute("UPDATE _ingest_chunks SET bytes = $3 WHERE run = $1 AND number = $2",
                               [String(started.run), "2"], bytes: stored[1])
        let joined = try PostgresJoin(url: url, options: options).run(run: started.run)
        #expect(joined.runFinished && joined.runRecords == 900)
        let spec = try PipelineSpec.parse(Array(pipeline.utf8))
        _ = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1, saveEvery: 100,
                                                               chunkSize: 300)).run()
        #expect(try Self.postgresRows(server.url, spec.model) == Self.sqliteRows(dir.file("store.sqlite"), spec.model))
    }

    @Test func keysAreToldApartByTheirBytesAsPostgreSQLDoes() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        // "é" composed and decomposed: one key to Swift's String equality, two to PostgreSQL.
        let feed = try dir.write("feed.ndjson", Array("{\"id\":\"caf\u{E9}\",\"title\":\"one\"}\n{\"id\":\"cafe\u{301}\",\"title\":\"two\"}\n".utf8))
        let started = try PostgresImport.start(feed: feed, pipeline: Array(UpdateRuleTests.pipelineText().utf8), url: try PostgresURL(server.url),
                                               options: PostgresImportOptions(saveEvery: 10))
        let report = try PostgresJoin(url: try PostgresURL(server.url), options: PostgresImportOptions(workers: 1)).run(run: started.run)
        #expect(report.records == 2 && report.outcomes.inserted == 2)
        let rows = try Self.postgresRows(server.url, try UpdateRuleTests.spec().model)["Post"] ?? []
        #expect(rows.count == 2 && rows.contains { $0.hasSuffix("|one|0|NULL|NULL") } && rows.contains { $0.hasSuffix("|two|0|NULL|NULL") }, "\(rows)")
    }

    @Test func anotherModelsStoreIsRefusedAndAnUnreachableServerIsNamedWithoutItsPassword() throws {
        let server = try PostgresServer.database()
        _ = try PostgresStore(url: try PostgresURL(server.url), model: try UpdateRuleTests.spec().model)
        let other = try PipelineSpec.load(path: Self.photos).model
        #expect(throws: PostgresError.self) { try PostgresStore(url: try PostgresURL(server.url), model: other) }
        do {
            _ = try PostgresConnection(try PostgresURL("postgresql://ann:s3cret-pw@127.0.0.1:1/warehouse?connect_timeout=2"))
            Issue.record("connected to port 1")
        } catch {
            let message = "\(error)"
            #expect(message.contains("127.0.0.1") && message.contains(":1/") && message.contains("warehouse"), "\(message)")
            #expect(!message.contains("s3cret-pw"), "\(message)")
        }
        let shown = try PostgresURL("postgresql://ann:s3cret-pw@db:5433/w?sslmode=disable&password=other-pw").description
        #expect(shown == "postgresql://ann@db:5433/w?sslmode=disable", "\(shown)")
        #expect(try PostgresURL("host=db password=kv-pw dbname=w").description == "host=db dbname=w")
        do {
            _ = try PostgresURL("postgresql://ann:s3cr%zz@db/w")
            Issue.record("a malformed address was accepted")
        } catch {
            #expect(!"\(error)".contains("s3cr"), "libpq's parse message quotes the password: \(error)")
            #expect("\(error)".hasPrefix("cannot connect to PostgreSQL at (an address libpq cannot read): not a valid postgresql:// URL or key=value string"),
                    "\(error)")
        }
    }

    @Test func anotherFeedWaitsForTheUnfinishedRunJoinSaysWhenThereIsNothingToJoinAndQueryReads() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try dir.write("first.ndjson", Array(#"{"id":"p1","title":"one"}"#.utf8) + [0x0A])
        let second = try dir.write("second.ndjson", Array(#"{"id":"p2","title":"two"}"#.utf8) + [0x0A])
        let pipeline = try dir.write("pipeline.json", Array(UpdateRuleTests.pipelineText().utf8))
        // Registered, not imported: as if its processes had all died.
        _ = try PostgresImport.start(feed: first, pipeline: Array(UpdateRuleTests.pipelineText().utf8), url: try PostgresURL(server.url),
                                     options: PostgresImportOptions(leaseSeconds: 1))
        let refused = try IngestBinary.run(["import", second, "--pipeline", pipeline, "--store", server.url])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("has an unfinished import, run 1 of \(first)") && refused.stderr.contains("ingest resume \(server.url)")
                && refused.stderr.contains("--abandon-run"), "\(refused.stderr)")
        let joined = try IngestBinary.run(["join", server.url])
        #expect(joined.status == 0 && joined.stdout.contains("run 1 finished: 1 record done"), "\(joined.stdout)\(joined.stderr)")
        let nothing = try IngestBinary.run(["join", server.url])
        #expect(nothing.status == 0 && nothing.stdout.contains("nothing to join: its last import, run 1, is finished"), "\(nothing.stdout)")
        let next = try IngestBinary.run(["import", second, "--pipeline", pipeline, "--store", server.url, "--quiet"])
        #expect(next.status == 0, "\(next.stderr)")
        let status = try IngestBinary.run(["status", server.url])
        #expect(status.stdout.contains("Post: 2") && status.stdout.contains("run 2: finished"), "\(status.stdout)")
        let query = try IngestBinary.run(["query", server.url, "Post", "--sort", "id", "--fields", "id,title", "--format", "csv"])
        #expect(query.status == 0 && query.stdout == "id,title\r\np1,one\r\np2,two\r\n", "\(query.stdout)\(query.stderr)")
        let count = try IngestBinary.run(["query", server.url, "Post", "--where", "title ==[c] 'TWO'", "--count"])
        #expect(count.stdout == "1\n", "\(count.stdout)\(count.stderr)")
        // Without --pipeline the store's runs' pipeline is used, as a SQLite store keeps its
        // own (inferring one anew made another model, which the store refused; the hint a
        // stopped split prints is this very command).
        let third = try dir.write("third.ndjson", Array(#"{"id":"p3","title":"three","extra":1}"#.utf8) + [0x0A])
        let reused = try IngestBinary.run(["import", third, "--store", server.url])
        #expect(reused.status == 0 && reused.stderr.contains("no --pipeline: using the pipeline of the store's newest run"), "\(reused.stderr)")
        // join on a database nothing was imported into, and on one that does not exist.
        let empty = try server.createDatabase("nothing_here")
        let notAStore = try IngestBinary.run(["join", empty])
        #expect(notAStore.status == 1 && notAStore.stderr.contains("holds no Ingest store: nothing has been imported into it")
                && !notAStore.stderr.contains("_ingest_runs"), "\(notAStore.stderr)")
        // Tables of the model's names that Ingest did not make, a schema that does not exist,
        // and an option libpq does not know: each named, not the first SQL that fails.
        let foreign = try server.createDatabase("foreign_tables")
        _ = try Self.psql(server, database: "foreign_tables", #"CREATE TABLE "Post" (x int)"#)
        let taken = try IngestBinary.run(["import", third, "--pipeline", pipeline, "--store", foreign])
        #expect(taken.status == 1 && taken.stderr.contains("has tables Ingest did not make with the names the model needs (\"Post\")"), "\(taken.stderr)")
        let noSchema = try IngestBinary.run(["import", third, "--pipeline", pipeline, "--store", empty + "&options=-csearch_path%3Dnosuchschema"])
        #expect(noSchema.status == 1 && noSchema.stderr.contains("selects no schema that exists and that this role may use to make the store's tables in"), "\(noSchema.stderr)")
        let option = try IngestBinary.run(["status", empty + "&nosuchoption=1"])
        #expect(option.status == 1 && option.stderr.contains(#"invalid URI query parameter: "nosuchoption""#), "\(option.stderr)")
        let missing = empty.replacingOccurrences(of: "nothing_here?", with: "no_such_database?")
        let noDatabase = try IngestBinary.run(["join", missing])
        #expect(noDatabase.status == 1 && noDatabase.stderr.contains("does not exist") && !noDatabase.stderr.contains("continue with"),
                "\(noDatabase.stderr)")
    }

    /// The run's split finished, so no split compares the feed again: a feed changed in
    /// place (same size) is hashed and refused before the import continues the run with
    /// the other feed's stored chunks; the same bytes again continue it.
    @Test func aFeedChangedInPlaceAfterItsSplitIsRefusedAndTheSameFeedContinues() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(#"{"id":"p1","title":"one"}"#.utf8) + [0x0A])
        let pipeline = Array(UpdateRuleTests.pipelineText().utf8)
        let url = try PostgresURL(server.url)
        let started = try PostgresImport.start(feed: feed, pipeline: pipeline, url: url, options: PostgresImportOptions(leaseSeconds: 1))
        #expect(started.registered && !started.needsSplit)
        try Data(Array(#"{"id":"p2","title":"two"}"#.utf8) + [0x0A]).write(to: URL(fileURLWithPath: feed))
        let refused = #expect(throws: ImportError.self) {
            try PostgresImport.start(feed: feed, pipeline: pipeline, url: url, options: PostgresImportOptions(leaseSeconds: 1))
        }
        #expect(refused?.message.contains("has an unfinished import, run 1 of \(feed): the feed differs (same size, other content)") == true,
                "\(refused?.message ?? "")")
        try Data(Array(#"{"id":"p1","title":"one"}"#.utf8) + [0x0A]).write(to: URL(fileURLWithPath: feed))
        let continued = try PostgresImport.start(feed: feed, pipeline: pipeline, url: url, options: PostgresImportOptions(leaseSeconds: 1))
        #expect(continued.run == 1 && !continued.registered)
        let report = try PostgresJoin(url: url, options: PostgresImportOptions(workers: 1)).run(run: 1)
        #expect(report.runFinished && report.runRecords == 1)
    }

    /// Three processes on one import, each killed with SIGKILL at random moments and
    /// started again with `ingest join`: the store ends as a clean SQLite import of the
    /// feed, and every record was committed exactly once (the processes' counts, kept in
    /// the same transactions as the rows, add up to the feed).
    @Test(.timeLimit(.minutes(5)), arguments: Stress.pick(["batch", "objects"], quick: ["batch"]))
    func threeProcessesKilledAtRandomAndRejoinedEndAsACleanSQLiteImport(path: String) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        // Long enough that every join started after a kill finds the run still going (imports got faster).
        try FeedGenerator(records: 20_000, seed: 11).write(to: feed)
        // The reject rule takes the object path; the feed's repeated photographers are identical, so none is rejected.
        let pipeline = path == "batch" ? Self.photos : try dir.write("objects.json", Array(
            try String(contentsOfFile: Self.photos, encoding: .utf8)
                .replacingOccurrences(of: #""Photographer": {"#, with: #""Photographer": { "onConflict": "reject","#).utf8))
        var processes = [try IngestBinary.start(["import", feed, "--pipeline", pipeline, "--store", server.url, "--workers", "2",
                                                 "--chunk-size", "400", "--save-every", "50", "--lease-seconds", "1.5", "--quiet"])]
        let url = try PostgresURL(server.url)
        func registered() -> Bool { ((try? PostgresStatus.read(url: url))?.runs.count ?? 0) > 0 }
        let deadline = Date().addingTimeInterval(60)
        while !registered() && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(registered(), "the run was registered")
        let join = ["join", server.url, "--workers", "2", "--quiet"]
        processes.append(try IngestBinary.start(join))
        processes.append(try IngestBinary.start(join))
        var kills = 0
        var generator = SystemRandomNumberGenerator()
        while kills < 9 {
            Thread.sleep(forTimeInterval: Double.random(in: 0.15...0.6, using: &generator))
            guard let status = try? PostgresStatus.read(url: url), status.runs.last?.state == "running" else { break }
            let victim = Int.random(in: 0..<processes.count, using: &generator)
            guard processes[victim].process.isRunning else { continue }
            kill(processes[victim].process.processIdentifier, SIGKILL)
            _ = IngestBinary.finish(processes[victim])
            kills += 1
            processes[victim] = try IngestBinary.start(join)
        }
        for process in processes {
            let outcome = IngestBinary.finish(process)
            #expect(outcome.status == 0, "\(outcome.stderr)")
        }
        #expect(kills >= 3, "processes were killed during the import")
        let status = try PostgresStatus.read(url: url)
        #expect(status.runs.last?.state == "finished")
        // A process killed before it registered leaves no row, and so does one started as the
        // run ended (it finds nothing to join); the last ones that joined say they finished.
        let last = Set(processes.map { Int($0.process.processIdentifier) })
        let lastRows = status.processes.filter { last.contains($0.pid) }
        #expect(!lastRows.isEmpty && lastRows.allSatisfy { $0.state == "finished" }, "\(lastRows.map(\.state))")
        #expect(status.processes.count { $0.state == "finished" } >= lastRows.count)
        #expect(status.processes.allSatisfy { $0.state == "finished" || $0.state == "running" },
                "the others are the killed ones, which never said they ended")
        #expect(status.processes.count > lastRows.count && status.processes.count <= 3 + kills)
        #expect(status.processes.reduce(0) { $0 + $1.records } == 20_000, "every record committed exactly once")

        let spec = try PipelineSpec.load(path: pipeline)
        #expect((spec.mappings["Photographer"]?.onConflict == .reject) == (path == "objects"))
        _ = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: 1)).run()
        let sqlite = try Self.sqliteRows(dir.file("store.sqlite"), spec.model)
        let postgres = try Self.postgresRows(server.url, spec.model)
        #expect(sqlite["Photo"]?.count == 20_000)
        #expect(postgres == sqlite)
        #expect(try PostgresStatus.check(url: url) == [])
        // A dangling link and a marker past its chunk are found.
        let connection = try PostgresConnection(url)
        try connection.execute("UPDATE \"Photo\" SET \"_whoTook\" = 999999 WHERE \"_pk\" = (SELECT min(\"_pk\") FROM \"Photo\")")
        try connection.execute("UPDATE _ingest_chunks SET done = records + 1 WHERE number = 2")
        let checked = try IngestBinary.run(["status", server.url, "--check"])
        #expect(checked.status == 1 && checked.stdout.contains("Photo.whoTook: 1 row(s) point at no Photographer")
                && checked.stdout.contains("run 1, chunk 2: marker at 401 of 400 records"), "\(checked.stdout)")
    }
}
