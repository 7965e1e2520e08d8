import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// The batch path (`RowMapper` + `BatchInserter`) against the object path (managed
/// objects, contexts), which stays the reference: the same feed must give the same
/// store, column for column, and the same rejects.
@Suite struct BatchPathTests {
    static var spec: PipelineSpec { RecordMapperTests.spec }

    /// Records that take every branch of the fast path and of its fallbacks. They sit in
    /// one chunk, so "a later record with the same key updates the fields it gives" does
    /// not depend on which worker runs first.
    static let edgeRecords = [
        #"{"id":"e1","title":"plain","views":" 12 ","photographer":{"id":"ep1","name":"A"}}"#,
        #"{"id":"e2","ti\u0074le":"escaped key","views":"1e3"}"#,
        #"{"id":"e3","views":1,"views":2,"title":"duplicate key: the last wins"}"#,
        #"{"id":"e4","views":1.0,"photographer":"ep2"}"#,
        #"{"id":"e5","photographer":null,"latitude":"38.7","longitude":-0.0}"#,
        #"{"id":"e6","photographer":[{"id":"ep3"}]}"#,
        #"{"id":"e7","title":"caf\u00e9 \"quoted\" \\ slash","subtitle":"café ☕ 𝄞"}"#,
        #"{"id":"e8","uploadDate":1709640000,"tags":{"a":[1,{"b":null}],"c":"\u00e9"}}"#,
        #"{"id":"e9","uploadDate":"2024-03-05T12:34:56.123+02:00","views":-42}"#,
        #"{"id":"e10","uploadDate":"yesterday"}"#,
        #"{"id":"e11","latitude":1e400}"#,
        #"{"id":"e12","views":99999999999999999999}"#,
        #"{"id":42,"title":true,"subtitle":12.50,"views":"007"}"#,
        #"{"id":true,"photographer":{"id":7,"name":"numeric key"}}"#,
        #"{"title":"no id"}"#,
        #"{"id":"e1","title":"same id again: overwrites e1","photographer":{"id":"ep1","name":"B (a later copy updates ep1)"}}"#,
        #"{"id":"e15","photographer":{"name":"no key"}}"#,
        #"{ "id" : "e16" , "views" : 3 , "unknown" : {"x":[{"y":"\""}],"deep":[[[[[]]]]]} }"#,
        #"5"#,
        #"{"id":"e18","views":"12.5"}"#,
        #"{"id":"e19","uploadDate":"2024-02-30T00:00:00Z"}"#,
        #"{"id":"e20","tags":["x","y"],"photographer":{"id":"ep4","name":null}}"#,
        // JSON text columns: kept as the record's bytes when already compact, else written again.
        #"{"id":"e21","tags":{"k":[-0,1E+2,2.5e-3,true,false,null,[],{}],"s":"a b","k":"again"}}"#,
        #"{"id":"e22","tags":[ "x" , { "k" : [1, 2] } ]}"#,
        #"{"id":"e23","tags":["café","x"]}"#,
        #"{"id":"e24","tags":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
    ]

    /// Every photo with its photographer, every column and its SQLite type, sorted.
    func dump(_ store: String) throws -> [String] {
        let db = try SQLiteFile(store, readOnly: true)
        let photos = try db.namedRows("""
            SELECT p.*, typeof(p.views), typeof(p.latitude), typeof(p.uploadDate), g.id AS gid, g.name AS gname
            FROM Photo p LEFT JOIN Photographer g ON g._pk = p._whoTook ORDER BY p.id
            """)
        let photographers = try db.namedRows("SELECT id, name FROM Photographer ORDER BY id")
        return (photos + photographers).map { row in
            row.filter { $0.name != "_pk" && $0.name != "_whoTook" }.map { cell in
                "\(cell.name)=" + (cell.value.map { cell.isText ? "\"\($0)\"" : $0 } ?? "NULL")
            }.joined(separator: " ")
        }
    }

    func run(_ dir: TemporaryDirectory, feed: String, store: String, objectPath: Bool, workers: Int = 2,
             saveEvery: Int = 7) throws -> ImportReport {
        var options = Importer.Options(feed: feed, store: dir.file(store), workers: workers, saveEvery: saveEvery, chunkSize: 50)
        options.objectPath = objectPath
        return try Importer(spec: Self.spec, options: options).run()
    }

    @Test func bothPathsGiveTheSameStoreAndTheSameRejects() throws {
        let dir = try TemporaryDirectory()
        var lines = String(decoding: FeedGenerator(records: 300, seed: 21, ndjson: true).bytes(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        lines.insert(contentsOf: Self.edgeRecords, at: 100)
        let feed = try dir.write("feed.json", Array(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8))
        let batch = try run(dir, feed: feed, store: "batch.sqlite", objectPath: false)
        let objects = try run(dir, feed: feed, store: "objects.sqlite", objectPath: true)
        // e19's February 30th is refused on both paths (Foundation's reader once rolled it over to March 1st).
        #expect(batch.rejected == 9, "\((try? String(contentsOfFile: batch.rejectsFile, encoding: .utf8)) ?? "")")
        #expect(batch.counts == objects.counts)
        let (batchRows, objectRows) = (try dump(dir.file("batch.sqlite")), try dump(dir.file("objects.sqlite")))
        #expect(batchRows.count == objectRows.count)
        for (a, b) in zip(batchRows, objectRows) where a != b { Issue.record("batch: \(a)\nobjects: \(b)") }
        let rejects = { (path: String) in try String(contentsOfFile: path, encoding: .utf8) }
        #expect(try rejects(batch.rejectsFile) == rejects(objects.rejectsFile))
        #expect(try rejects(batch.rejectsFile).contains(#""reason":"whoTook: a list, but Photo.whoTook is to-one""#))
        #expect(batchRows.contains { $0.hasPrefix(#"id="e1" title="same id again: overwrites e1" "#) && $0.contains("views=12 ")
                    && $0.hasSuffix(#"gid="ep1" gname="B (a later copy updates ep1)""#) },
                "a later record overwrites the fields it gives, keeps the others, and updates its related objects too")
    }

    /// Feeds that mix stored and new keys in one batch, then only stored ones, then only
    /// new ones: rows first tried with a plain INSERT fall back to the upsert where the key
    /// is stored, and the batch path switches between the two as the share of new rows
    /// moves. The store and the counts are the object path's, run after run.
    @Test func batchesMixingStoredAndNewKeysUpdateAndInsertAsTheObjectPathDoes() throws {
        let dir = try TemporaryDirectory()
        let records = String(decoding: FeedGenerator(records: 600, seed: 5, ndjson: true, style: .realistic).bytes(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        func feed(_ name: String, _ lines: [String]) throws -> String {
            try dir.write(name, Array(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8))
        }
        let retitled = records[0..<200].enumerated().map { index, line in
            index % 2 == 0 ? line.replacingOccurrences(of: #""title":""#, with: #""title":"again "#) : line
        }
        let feeds = [
            try feed("a.json", Array(records[0..<200])),
            // Stored and new keys alternating in each batch.
            try feed("b.json", zip(retitled[0..<100], records[200..<300]).flatMap { [$0, $1] }),
            try feed("c.json", Array(retitled)),
            try feed("d.json", Array(records[300..<600])),
        ]
        var outcomes: [[RecordOutcomes?]] = [[], []]
        for (path, objectPath) in [(0, false), (1, true)] {
            for feed in feeds {
                var options = Importer.Options(feed: feed, store: dir.file("store-\(path).sqlite"), workers: 1, saveEvery: 50, chunkSize: 100)
                options.objectPath = objectPath
                outcomes[path].append(try Importer(spec: Self.spec, options: options).run().outcomes)
            }
        }
        #expect(outcomes[0] == outcomes[1])
        #expect(outcomes[0][1]?.inserted == 100 && outcomes[0][1]?.updated == 50 && outcomes[0][1]?.unchanged == 50,
                "\(String(describing: outcomes[0][1]))")
        #expect(outcomes[0][3]?.inserted == 300)
        #expect(try dump(dir.file("store-0.sqlite")) == dump(dir.file("store-1.sqlite")))
    }

    /// A chunk of 2 GiB or more (records of hundreds of KB, thousands to a chunk) crashed the
    /// import and every resume at `Int32(offset)`: a record past 2 GiB into its chunk is
    /// mapped with its values copied, and stored as the same record early in a chunk is.
    @Test func aRecordPastTwoGiBIntoItsChunkIsStoredAsOneNearItsStart() throws {
        let spec = Self.spec
        let record = Array(#"{"id": "p-far", "title": "Far into the chunk", "views": 7, "photographer": {"id": "g-1", "name": "Ada"}}"#.utf8)
        var stores: [[String]] = []
        for padding in [0, Int(Int32.max) - 10] {
            let dir = try TemporaryDirectory()
            let inserter = BatchInserter(coordinator: try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite")))
            let rows = try #require(RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter))
            var text = [UInt8](repeating: UInt8(ascii: " "), count: padding)
            text += record
            var request = inserter.makeRequest(text: text)
            try rows.add(record: padding..<text.count, number: 0, to: &request)
            text = []
            _ = try inserter.execute(request, metadata: [:])
            stores.append(try dump(dir.file("s.sqlite")))
        }
        #expect(stores[0].count == 2 && stores[0] == stores[1], "\(stores)")
    }

    /// What real feeds do (numbers as strings, integers for doubles, nulls, empty and missing
    /// members, escapes, unmapped nested objects and arrays, members in another order) is
    /// mapped on the fast path: only records that need the full parser's judgement leave it.
    @Test func theRealisticFeedIsMappedOnTheFastPath() throws {
        let spec = try PipelineSpec.load(path: PipelineSpecTests.root.appendingPathComponent("Pipelines/bench-photos.json").path)
        let dir = try TemporaryDirectory()
        let inserter = BatchInserter(coordinator: try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite")))
        let rows = try #require(RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter))
        let text = FeedGenerator(records: 3_000, seed: 8, ndjson: true, style: .realistic).bytes()
        var request = inserter.makeRequest(text: text)
        var start = 0
        var number = 0
        for (index, byte) in text.enumerated() where byte == UInt8(ascii: "\n") {
            try rows.add(record: start..<index, number: number, to: &request)
            number += 1
            start = index + 1
        }
        #expect(number == 3_000)
        #expect(rows.slowRecords == 0, "\(rows.slowRecords) of 3,000 records took the slow path")
    }

    /// A worker empties its request after each save and fills it again in the same memory
    /// (`removeAll(text:)`): the store ends as with a fresh request for every batch, rows
    /// and row numbers alike.
    @Test func aRequestEmptiedAfterASaveAndFilledAgainStoresWhatFreshRequestsStore() throws {
        let spec = try PipelineSpec.load(path: PipelineSpecTests.root.appendingPathComponent("Pipelines/bench-photos.json").path)
        let text = FeedGenerator(records: 900, seed: 21, ndjson: true, style: .realistic).bytes()
        var lines: [Range<Int>] = []
        var start = 0
        for (index, byte) in text.enumerated() where byte == UInt8(ascii: "\n") {
            lines.append(start..<index)
            start = index + 1
        }
        var stores: [[String]] = []
        for reused in [false, true] {
            let dir = try TemporaryDirectory()
            let inserter = BatchInserter(coordinator: try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite")))
            let rows = try #require(RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter))
            var request = inserter.makeRequest(text: text)
            for (number, range) in lines.enumerated() {
                try rows.add(record: range, number: number, to: &request)
                guard (number + 1) % 200 == 0 || number == lines.count - 1 else { continue }
                _ = try inserter.execute(request, metadata: [:])
                if reused { request.removeAll(text: text) } else { request = inserter.makeRequest(text: text) }
                #expect(request.isEmpty)
            }
            let db = try SQLiteFile(dir.file("s.sqlite"), readOnly: true)
            stores.append(try dump(dir.file("s.sqlite")) + db.strings("SELECT _pk || ' ' || id FROM Photo ORDER BY _pk"))
        }
        #expect(stores[0].count > 900 && stores[0] == stores[1])
    }

    /// Emptied, a request keeps no lineage of its last chunk, and a copy taken before (a batch
    /// still being written, on PostgreSQL) keeps its rows and lineage.
    @Test func anEmptiedRequestHasNoLineageAndACopyTakenBeforeKeepsItsRows() throws {
        let spec = try PipelineSpec.load(path: PipelineSpecTests.root.appendingPathComponent("Pipelines/bench-photos.json").path)
        let dir = try TemporaryDirectory()
        let inserter = BatchInserter(coordinator: try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite")))
        let rows = try #require(RowMapper(mapper: RecordMapper(spec: spec), inserter: inserter))
        let text = Array(#"{"id": "p1", "title": "One", "photographer": {"id": "g1", "name": "Ada"}}"#.utf8)
        var request = inserter.makeRequest(text: text)
        request.lineage = (run: 7, chunk: 3)
        try rows.add(record: 0..<text.count, number: 0, to: &request)
        let held = request
        request.removeAll(text: text)
        #expect(request.isEmpty && request.lineage == nil)
        #expect(held.recordCount == 1 && held.lineage?.run == 7 && held.lineage?.chunk == 3)
        _ = try inserter.execute(held, metadata: [:])
        #expect(try dump(dir.file("s.sqlite")).count == 2)
    }

    /// The workers step over members by the ends their own split wrote; a resumed run, whose
    /// chunks an earlier process wrote, scans them, and both make the same store.
    @Test func aRunStepsByItsOwnSplitsMemberEndsAndAResumedRunScans() throws {
        let spec = try PipelineSpec.load(path: PipelineSpecTests.root.appendingPathComponent("Pipelines/bench-photos.json").path)
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 3_000, seed: 12, style: .realistic).write(to: feed)
        let whole = try Importer(spec: spec, options: .init(feed: feed, store: dir.file("whole.sqlite"), workers: 2, saveEvery: 250,
                                                             chunkSize: 500)).run()
        #expect(whole.imported == 3_000)
        // Read 256 KiB at a time, a key that a read's end splits sends its record to the scan.
        let stepped = try #require(whole.steppedRecords)
        #expect(stepped >= 2_990 && stepped <= 3_000, "\(stepped)")

        let options = Importer.Options(feed: feed, store: dir.file("resumed.sqlite"), workers: 1, saveEvery: 250, chunkSize: 500)
        // The split is made whole first, with its ends, by another than the runs below: neither
        // may read those ends (a process trusts only the files its own split wrote).
        let stopped = Importer(spec: spec, options: options)
        var split = SplitOptions(chunkSize: 500)
        split.writesMemberEnds = true
        let chunks = dir.file("resumed.sqlite") + ".chunks/run-0001"
        _ = try Splitter(feedPath: feed, directory: chunks, options: split).run()
        #expect(FileManager.default.fileExists(atPath: chunks + "/" + MemberEnds.fileName(for: 6)))
        stopped.stopAfterSaves.store(1, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        let resumed = try Importer(spec: spec, options: options).run()
        #expect(resumed.imported == 2_750)
        #expect(resumed.steppedRecords == 0)
        #expect(try dump(dir.file("whole.sqlite")) == dump(dir.file("resumed.sqlite")))
    }

    @Test(arguments: [1, 2, 4])
    func workersRacingForTheSameRelatedObjectsLeaveOneRowEach(workers: Int) throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 2_000, seed: 4).write(to: feed)
        let batch = try run(dir, feed: feed, store: "batch.sqlite", objectPath: false, workers: workers, saveEvery: 13)
        let reference = try run(dir, feed: feed, store: "objects.sqlite", objectPath: true, workers: 1)
        #expect(batch.counts == reference.counts)
        #expect(try dump(dir.file("batch.sqlite")) == dump(dir.file("objects.sqlite")))
    }

    /// Each worker is a thread of its own: with more workers than cores, every one still
    /// takes chunks (concurrentPerform ran only as many at once as there are cores), and
    /// the report's timeline accounts for every record, per worker.
    @Test func everyWorkerTakesChunksAndTheTimelineCountsEveryRecord() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 4_000, seed: 8).write(to: feed)
        let report = try run(dir, feed: feed, store: "s.sqlite", objectPath: false, workers: 4, saveEvery: 25)
        let timeline = try #require(report.timeline)
        #expect(timeline.count == 4)
        let perWorker: [Int] = timeline.map { $0.reduce(0, +) }
        #expect(perWorker.allSatisfy { $0 > 0 }, "\(timeline)")
        #expect(perWorker.reduce(0, +) == 4_000)
        #expect(report.writePath == "batch")
        #expect(report.stageRates.map { $0.map > 0 && $0.save > 0 } == true)
    }

    /// A related object named only by its key, whose entity requires more: on the
    /// batch path that record is rejected with a reason in model names, and the rest imports.
    @Test func aRelatedObjectGivenOnlyByItsKeyIsRejectedWhenItsEntityNeedsMore() throws {
        let pipeline = #"""
            {"model": {"entities": [
               {"name": "Ticket", "attributes": [{"name": "id", "type": "int64", "optional": false}],
                "relationships": [{"name": "event", "destination": "Event", "inverse": "tickets"}], "unique": [["id"]]},
               {"name": "Event", "attributes": [{"name": "id", "type": "int64", "optional": false},
                                                {"name": "name", "type": "string", "optional": false}],
                "relationships": [{"name": "tickets", "destination": "Ticket", "inverse": "event", "toMany": true}],
                "unique": [["id"]]}]},
             "record": "Ticket",
             "mappings": {"Ticket": {"attributes": {"id": "id"}, "relationships": {"event": "event"}},
                          "Event": {"attributes": {"id": "id", "name": "name"}}}}
            """#
        let spec = try PipelineSpec.parse(Array(pipeline.utf8))
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"""
            [{"id": 1, "event": {"id": 17, "name": "Opening"}},
             {"id": 2, "event": 17},
             {"id": 3, "event": 18},
             {"id": 4}]
            """#.utf8))
        let report = try Importer(spec: spec, options: .init(feed: feed, store: dir.file("s.sqlite"), workers: 1)).run()
        #expect(report.counts == ["Ticket": 3, "Event": 1])
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        #expect(rejects == #"{"run":1,"chunk":1,"index":2,"record":2,"reason":"Event 18: name is required (the record gives only its key)","text":"{\"id\": 3, \"event\": 18}"}"# + "\n")
    }

    @Test func pipelinesTheBatchPathCannotWriteTakeTheObjectPath() throws {
        let spec = try PipelineSpec.parse(Array(#"""
            {"model": {"entities": [
               {"name": "Post", "attributes": [{"name": "id", "type": "string"}],
                "relationships": [{"name": "tags", "destination": "Tag", "inverse": "posts", "toMany": true}], "unique": [["id"]]},
               {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
                "relationships": [{"name": "posts", "destination": "Post", "inverse": "tags", "toMany": true}], "unique": [["name"]]}]},
             "record": "Post",
             "mappings": {"Post": {"attributes": {"id": "id"}, "relationships": {"tags": "tags"}},
                          "Tag": {"attributes": {"name": "name"}}}}
            """#.utf8))
        let dir = try TemporaryDirectory()
        let coordinator = try PersistentStoreCoordinator(model: spec.model, path: dir.file("s.sqlite"))
        #expect(RowMapper(mapper: RecordMapper(spec: spec), inserter: BatchInserter(coordinator: coordinator)) == nil)
        let photos = try PersistentStoreCoordinator(model: Self.spec.model, path: dir.file("p.sqlite"))
        #expect(RowMapper(mapper: RecordMapper(spec: Self.spec), inserter: BatchInserter(coordinator: photos)) != nil)
    }
}
