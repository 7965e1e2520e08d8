import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// The run around the workers: the main context, progress events, the report, rejects.
@Suite struct ImportRunTests {
    static var spec: PipelineSpec { RecordMapperTests.spec }

    func storeCounts(_ path: String) throws -> [String: Int] {
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: path)
        return ["Photo": try coordinator.count("Photo"), "Photographer": try coordinator.count("Photographer")]
    }

    /// Each progress event is taken while the store is read: the main context's counts
    /// (merged from save notices) may lag the store, never lead it, and end equal.
    @Test func theMainContextsCountsNeverRunAheadOfTheStoreAndEndEqualToIt() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 3_000, seed: 11).write(to: feed)
        let store = dir.file("store.sqlite")
        let importer = Importer(spec: Self.spec, options: .init(feed: feed, store: store, workers: 4, saveEvery: 50, chunkSize: 250))
        let reader = try PersistentStoreCoordinator(model: Self.spec.model, path: store)
        let seen = Mutex<(events: [ImportProgress], ahead: [String])>(([], []))
        importer.addProgressObserver { event in
            let photos = (try? reader.count("Photo")) ?? -1
            let photographers = (try? reader.count("Photographer")) ?? -1
            seen.withLock { seen in
                seen.events.append(event)
                if event.counts["Photo", default: 0] > photos || event.counts["Photographer", default: 0] > photographers {
                    seen.ahead.append("main context \(event.counts) ahead of the store (\(photos), \(photographers))")
                }
            }
        }
        let report = try importer.run()
        let (events, ahead) = seen.withLock { ($0.events, $0.ahead) }
        #expect(ahead.isEmpty, "\(ahead.prefix(3))")
        #expect(events.count >= 60, "one event per save (60 saves), then the final one")
        #expect(events.last?.isFinal == true && events.dropLast().allSatisfy { !$0.isFinal })
        #expect(events.last?.counts == (try storeCounts(store)))
        #expect(events.last?.counts == report.counts)
        #expect(events.last?.chunksDone == 12 && events.last?.chunksTotal == 12 && events.last?.recordsThisRun == 3_000)
        let photos = events.map { $0.counts["Photo", default: 0] }
        #expect(photos == photos.sorted(), "counts only grow during an import")
    }

    @Test func progressEventsArriveAsAnAsyncSequenceThatEndsWithTheFinalEvent() async throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 500, seed: 3).write(to: feed)
        let importer = Importer(spec: Self.spec, options: .init(feed: feed, store: dir.file("store.sqlite"), workers: 2,
                                                               saveEvery: 100, chunkSize: 250))
        let events = importer.progressEvents()
        let collector = Task {
            var all: [ImportProgress] = []
            for await event in events { all.append(event) }
            return all
        }
        let report = try await Task.detached { try importer.run() }.value
        let all = await collector.value
        #expect(all.count == 8, "six saves, the save recording the feed's hash after the split, and the final event")
        #expect(all.last?.isFinal == true)
        #expect(all.last?.counts == report.counts)
    }

    /// Found by probing: a process killed while a finished run deleted its chunk files left
    /// the rest on disk for good. The next resume or import removes them; a run that keeps
    /// its chunks (--keep-chunks) keeps them.
    @Test func chunkFilesAFinishedRunLeftBehindGoWithTheNextResumeOrImport() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600, seed: 4).write(to: feed)
        let store = dir.file("store.sqlite")
        let report = try Importer(spec: Self.spec, options: .init(feed: feed, store: store, chunkSize: 100)).run()
        let chunks = try #require(report.chunksDirectory)
        #expect(!FileManager.default.fileExists(atPath: chunks))
        // What a kill during the deletion leaves: some chunk files of the finished run.
        func leaveBehind() throws {
            try FileManager.default.createDirectory(atPath: chunks, withIntermediateDirectories: true)
            for index in 4...6 { try Data("{}\n".utf8).write(to: URL(fileURLWithPath: chunks + "/" + ChunkInfo.fileName(for: index))) }
        }
        try leaveBehind()
        let resumed = try IngestBinary.run(["resume", store])
        #expect(resumed.status == 0)
        #expect(resumed.stdout.contains("removed 3 chunk file(s) that finished run 1 left behind"), "\(resumed.stdout)")
        #expect(!FileManager.default.fileExists(atPath: chunks))
        try leaveBehind()
        let other = dir.file("other.json")
        try FeedGenerator(records: 50, seed: 5).write(to: other)
        let imported = try IngestBinary.run(["import", other, "--pipeline", RunCommandTests.pipeline, "--store", store, "--chunk-size", "100"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("ingest: removed 3 chunk file(s) that finished run 1 left behind\n"), "\(imported.stderr)")
        #expect(!FileManager.default.fileExists(atPath: chunks))
        try leaveBehind()
        _ = try Importer(spec: Self.spec, options: .init(feed: feed, store: store, chunkSize: 100, abandonRun: true)).run()
        #expect(!FileManager.default.fileExists(atPath: chunks), "the library removes them too")
        // Kept on purpose: left alone.
        let kept = try Importer(spec: Self.spec, options: .init(feed: feed, store: dir.file("kept.sqlite"), chunkSize: 100, keepChunks: true)).run()
        let keptChunks = try #require(kept.chunksDirectory)
        _ = try Importer(spec: Self.spec, options: .init(feed: other, store: dir.file("kept.sqlite"), chunkSize: 100)).run()
        #expect(try FileManager.default.contentsOfDirectory(atPath: keptChunks).count == 7, "six chunks and the manifest")
    }

    /// Found by probing: a manifest edited to list fewer chunks, its total lowered to match
    /// (so it adds up), let a resume finish without the rest of the feed. The run recorded
    /// how many chunks its split made: a manifest that lists another number is refused.
    @Test func aResumedRunRefusesAManifestListingOtherChunksThanItsSplitMade() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 1_000, seed: 9).write(to: feed)
        let store = dir.file("store.sqlite")
        let chunks = store + ".chunks/run-0001"
        func importer() -> Importer { Importer(spec: Self.spec, options: .init(feed: feed, store: store, workers: 1, saveEvery: 50, chunkSize: 100)) }
        // Split whole first, so that the run records its chunk count before it stops.
        _ = try Splitter(feedPath: feed, directory: chunks, options: SplitOptions(chunkSize: 100)).run()
        let stopped = importer()
        stopped.stopAfterSaves.store(1, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        let path = chunks + "/" + SplitManifest.fileName
        var manifest = try JSONDecoder().decode(SplitManifest.self, from: Data(FileOps.readFile(path)))
        #expect(manifest.chunks.count == 10)
        manifest.chunks.removeLast(3)
        manifest.totalRecords = 700
        try Data(JSONEncoder().encode(manifest)).write(to: URL(fileURLWithPath: path))
        #expect(throws: ImportError("the chunk directory \(chunks) was changed: its manifest lists 7 chunks, and the run's split made 10; delete \(chunks) and run ingest resume \(store) to split the feed into it again")) {
            try importer().run()
        }
        try FileManager.default.removeItem(atPath: chunks)
        let report = try importer().run()
        #expect(report.records == 1_000)
        #expect(try storeCounts(store)["Photo"] == 1_000)
    }

    /// Found by probing: chunks split in another size than the import's were found out after
    /// the run was recorded, leaving a new store with a run no resume could finish. The
    /// import is refused first, saying which size the chunks have, and records nothing.
    @Test func chunksSplitInAnotherSizeAreRefusedBeforeTheRunIsRecorded() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 30, seed: 2).write(to: feed)
        let chunks = dir.file("chunks")
        _ = try Splitter(feedPath: feed, directory: chunks, options: SplitOptions(chunkSize: 1)).run()
        let store = dir.file("store.sqlite")
        #expect(throws: ImportError("\(chunks) was split in chunks of 1 record, and this import asks for 3: pass --chunk-size 1 to import those chunks, or --chunks with another directory")) {
            try Importer(spec: Self.spec, options: .init(feed: feed, store: store, chunks: chunks, chunkSize: 3)).run()
        }
        #expect((try? ImportStatus.read(store: store)) == nil, "no run recorded: status says no import has written to the store")
        let report = try Importer(spec: Self.spec, options: .init(feed: feed, store: store, chunks: chunks, chunkSize: 1)).run()
        #expect(report.run == 1 && report.imported == 30)
    }

    @Test func theReportBesideTheStoreSaysWhatTheRunDid() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 400, seed: 8).write(to: feed)
        let importer = Importer(spec: Self.spec, options: .init(feed: feed, store: dir.file("store.sqlite"), workers: 2,
                                                               saveEvery: 100, chunkSize: 200))
        let report = try importer.run()
        let written = try JSONDecoder().decode(ImportReport.self, from: Data(contentsOf: URL(fileURLWithPath: importer.reportPath)))
        #expect(written == report)
        #expect(report.records == 400 && report.imported == 400 && report.rejectedThisRun == 0 && report.chunks == 2)
        #expect(report.counts == (try storeCounts(dir.file("store.sqlite"))))
        #expect(report.feedBytes == FileOps.fileSize(feed))
        #expect(report.peakRSSBytes > 0 && report.seconds > 0 && report.recordsPerSecond > 0)
        let stages = report.stages
        #expect(stages.split > 0 && stages.parse > 0 && stages.map > 0 && stages.save > 0)
    }

    /// Ten kinds of bad record among good ones: the rejects file is exactly the fixture's.
    @Test func aFixtureOfTenKindsOfBadRecordYieldsTheExactRejectsFile() throws {
        let dir = try TemporaryDirectory()
        let fixtures = PipelineSpecTests.root.appendingPathComponent("Fixtures/feeds").path
        let report = try Importer(spec: Self.spec, options: .init(feed: fixtures + "/bad-records.json",
                                                                 store: dir.file("store.sqlite"), workers: 2)).run()
        #expect(report.records == 12 && report.imported == 2 && report.rejected == 10)
        #expect(report.counts == ["Photo": 2, "Photographer": 1])
        let written = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        let expected = try String(contentsOfFile: fixtures + "/bad-records.rejects.ndjson", encoding: .utf8)
        #expect(written == expected)
    }

    /// Past --max-rejects the run stops at a save boundary with the count and the way
    /// on; raising the limit and resuming finishes, and no reject is written twice.
    @Test func maxRejectsStopsTheRunResumablyAndEachRejectIsWrittenOnce() throws {
        let dir = try TemporaryDirectory()
        var lines = String(decoding: FeedGenerator(records: 300, seed: 4, ndjson: true).bytes(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        for position in [10, 20, 30, 130, 230] { lines[position] = #"{"id":"bad\#(position)","views":"many"}"# }
        let feed = dir.file("feed.json")
        try Data(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8).write(to: URL(fileURLWithPath: feed))
        let store = dir.file("store.sqlite")
        func importer(_ maxRejects: Int?) -> Importer {
            Importer(spec: Self.spec, options: .init(feed: feed, store: store, workers: 1, saveEvery: 50, chunkSize: 100,
                                                     maxRejects: maxRejects))
        }
        let error = #expect(throws: ImportError.self) { try importer(2).run() }
        #expect(error?.kind == .tooManyRejects(rejected: 3, limit: 2, rejectsFile: store + ".rejects.ndjson"))
        #expect(error?.message == "stopped: 3 records rejected, more than the limit of 2 (see \(store).rejects.ndjson)")
        let stopped = try String(contentsOfFile: store + ".rejects.ndjson", encoding: .utf8)
        #expect(stopped.split(separator: "\n").count == 3)
        #expect(try ImportStatus.read(store: store).finished == false)
        let report = try importer(10).run()
        #expect(report.rejected == 5 && report.counts["Photo"] == 295)
        let reasons = try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n")
        #expect(reasons.count == 5)
        #expect(reasons.allSatisfy { $0.contains(#""reason":"views: \"many\" is not an integer""#) })
    }
}

/// Related objects nested in related objects are found or created at every level.
@Suite struct NestedRelationshipTests {
    static let specText = #"""
    {
      "model": { "entities": [
        { "name": "Photo", "attributes": [ { "name": "id", "type": "string", "optional": false } ],
          "relationships": [ { "name": "whoTook", "destination": "Photographer", "inverse": "photos" } ],
          "unique": [["id"]] },
        { "name": "Photographer", "attributes": [ { "name": "id", "type": "string", "optional": false } ],
          "relationships": [
            { "name": "photos", "destination": "Photo", "inverse": "whoTook", "toMany": true },
            { "name": "agency", "destination": "Agency", "inverse": "members" } ],
          "unique": [["id"]] },
        { "name": "Agency", "attributes": [ { "name": "code", "type": "string", "optional": false },
                                            { "name": "city", "type": "string" } ],
          "relationships": [ { "name": "members", "destination": "Photographer", "inverse": "agency", "toMany": true } ],
          "unique": [["code"]] } ] },
      "feed": {},
      "record": "Photo",
      "mappings": {
        "Photo": { "attributes": { "id": "id" }, "relationships": { "whoTook": { "from": "by" } } },
        "Photographer": { "attributes": { "id": "id" }, "relationships": { "agency": { "from": "agency" } } },
        "Agency": { "attributes": { "code": "code", "city": "where.city" } } },
      "import": { "chunkSize": 4, "saveEvery": 2 }
    }
    """#

    @Test func anAgencyInsideAPhotographerInsideAPhotoIsMadeOnceAndLinked() throws {
        let dir = try TemporaryDirectory()
        let pipeline = try dir.write("nested.json", Array(Self.specText.utf8))
        let spec = try PipelineSpec.load(path: pipeline)
        let feed = try dir.write("feed.json", Array("""
            [{"id":"1","by":{"id":"ann","agency":{"code":"MAG","where":{"city":"Paris"}}}},
             {"id":"2","by":{"id":"bob","agency":{"code":"MAG","where":{"city":"Paris"}}}},
             {"id":"3","by":{"id":"ann"}},
             {"id":"4","by":"cyd"},
             {"id":"5","by":{"id":"dee","agency":"VII"}}]
            """.utf8))
        let report = try Importer(spec: spec, options: .init(feed: feed, store: dir.file("store.sqlite"), workers: 2)).run()
        #expect(report.counts == ["Photo": 5, "Photographer": 4, "Agency": 2])
        let coordinator = try PersistentStoreCoordinator(model: spec.model, path: dir.file("store.sqlite"))
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            var agencyOf: [String: String] = [:]
            for photographer in try context.fetch("Photographer") {
                agencyOf[photographer.id!.stringValue!] = photographer.object(forKey: "agency")?["code"]?.stringValue ?? "-"
            }
            #expect(agencyOf == ["ann": "MAG", "bob": "MAG", "cyd": "-", "dee": "VII"])
            let mag = try #require(try context.fetch("Agency", where: "code", equals: .string("MAG")).first)
            #expect(mag["city"] == .string("Paris"))
            #expect(Set(mag.objects(forKey: "members").compactMap { $0.id?.stringValue }) == ["ann", "bob"])
        }
    }
}
