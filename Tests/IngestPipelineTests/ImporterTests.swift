import Synchronization
import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

@Suite struct ImporterTests {
    static var spec: PipelineSpec { RecordMapperTests.spec }

    /// (photo id, photographer id) for every photo, and the photographer ids.
    func contents(_ store: String) throws -> (photos: [String: String], photographers: Set<String>) {
        let coordinator = try PersistentStoreCoordinator(model: Self.spec.model, path: store)
        let context = ObjectContext(coordinator: coordinator)
        return try context.performAndWait {
            var photos: [String: String] = [:]
            var request = FetchRequest("Photo")
            request.relationshipKeyPathsForPrefetching = ["whoTook"]
            for photo in try context.fetch(request) {
                photos[photo.id!.stringValue!] = photo.object(forKey: "whoTook")?.id?.stringValue ?? "-"
            }
            let photographers = Set(try context.fetch("Photographer").compactMap { $0.id?.stringValue })
            return (photos, photographers)
        }
    }

    /// What the feed says: photo id → photographer id.
    func expected(_ feed: String) throws -> [String: String] {
        var result: [String: String] = [:]
        try FeedReader(path: feed).read { record in
            let value = try JSONValue.parse(record.bytes)
            result[value["id"]!.stringValue!] = value["photographer"]?["id"]?.stringValue ?? "-"
        }
        return result
    }

    func importer(_ dir: TemporaryDirectory, feed: String, store: String = "store.sqlite", workers: Int = 2) -> Importer {
        Importer(spec: Self.spec, options: .init(feed: feed, store: dir.file(store), workers: workers, saveEvery: 40, chunkSize: 100))
    }

    @Test func aFeedImportsCompletelyWithRelatedObjectsUniqued() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600).write(to: feed)
        let report = try importer(dir, feed: feed).run()
        #expect(report.records == 600 && report.imported == 600 && report.rejected == 0)
        let want = try expected(feed)
        let (photos, photographers) = try contents(dir.file("store.sqlite"))
        #expect(photos == want)
        #expect(photographers == Set(want.values))
        #expect(report.counts == ["Photo": 600, "Photographer": Set(want.values).count])
    }

    /// 600 records in chunks of 100 saved every 40: 18 saves; stopped after each of the first 17.
    @Test(arguments: Array(1...17))
    func aRunStoppedAtASaveResumesToTheCleanResult(stopAfter: Int) throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600, seed: 5).write(to: feed)
        _ = try importer(dir, feed: feed, store: "clean.sqlite").run()
        let clean = try contents(dir.file("clean.sqlite"))

        // One worker, so the stop falls exactly after save `stopAfter` (with several, another
        // worker may finish a save of its own at the same moment); the resume uses three.
        let first = importer(dir, feed: feed, workers: 1)
        first.stopAfterSaves.store(stopAfter, ordering: .relaxed)
        #expect(throws: ImportError.self) { try first.run() }
        let partial = try contents(dir.file("store.sqlite"))
        #expect(partial.photos.count == 100 * ((stopAfter - 1) / 3) + [40, 80, 100][(stopAfter - 1) % 3],
                "saves commit 40, 80 and 100 records of each chunk of 100, in order")
        let second = try importer(dir, feed: feed, workers: 3).run()
        #expect(second.imported == 600 - partial.photos.count, "a resumed run imports only what was left")
        let resumed = try contents(dir.file("store.sqlite"))
        #expect(resumed.photos == clean.photos)
        #expect(resumed.photographers == clean.photographers)
    }

    @Test func rejectsAreWrittenOnceWithTheirPlaceAndReason() throws {
        let dir = try TemporaryDirectory()
        var lines = String(decoding: FeedGenerator(records: 150, seed: 9, ndjson: true).bytes(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        lines.insert(#"{"title":"no id"}"#, at: 0)
        lines.insert(#"{"id":"x57","views":1.5}"#, at: 57)
        lines.insert(#"{"id":"x120","uploadDate":"someday","photographer":{"id":"p1"}}"#, at: 120)
        let feed = dir.file("feed.json")
        try Data(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8).write(to: URL(fileURLWithPath: feed))
        // Stopped after the first save, then resumed: each reject is written once.
        let first = importer(dir, feed: feed)
        first.stopAfterSaves.store(2, ordering: .relaxed)
        _ = try? first.run()
        let report = try importer(dir, feed: feed).run()
        #expect(report.rejected == 3)
        #expect(report.counts["Photo"] == 150)
        let text = try String(contentsOfFile: report.rejectsFile, encoding: .utf8)
        #expect(text == """
            {"run":1,"chunk":1,"index":0,"record":0,"reason":"id: missing required value (from 'id')","text":"{\\"title\\":\\"no id\\"}"}
            {"run":1,"chunk":1,"index":57,"record":57,"reason":"views: 1.5 is not an integer","text":"{\\"id\\":\\"x57\\",\\"views\\":1.5}"}
            {"run":1,"chunk":2,"index":20,"record":120,"reason":"uploadDate: \\"someday\\" is not a date (expected ISO 8601 or Unix seconds)","text":"{\\"id\\":\\"x120\\",\\"uploadDate\\":\\"someday\\",\\"photographer\\":{\\"id\\":\\"p1\\"}}"}

            """)
    }

    /// A store takes feed after feed: each import is a run of its own, and a finished run
    /// never blocks the next.
    @Test func aFinishedRunNeverBlocksTheNextFeed() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 120).write(to: feed)
        let first = try importer(dir, feed: feed).run()
        #expect(first.run == 1 && first.deletedChunks != nil)
        #expect(!FileManager.default.fileExists(atPath: dir.file("store.sqlite.chunks")), "a finished run's chunks are deleted")
        let other = dir.file("other.json")
        try FeedGenerator(records: 130).write(to: other)
        let second = try importer(dir, feed: other).run()
        #expect(second.run == 2 && second.counts["Photo"] == 130)
        #expect((second.outcomes?.updated ?? 0) + (second.outcomes?.unchanged ?? 0) == 120, "the generator's first 120 ids are met again: \(String(describing: second.outcomes))")
        let again = try importer(dir, feed: other).run()
        #expect(again.run == 3 && again.outcomes == RecordOutcomes(inserted: 0, updated: 0, unchanged: 130, duplicates: 0))
        let status = try ImportStatus.read(store: dir.file("store.sqlite"))
        #expect(status.runs.map(\.state) == ["finished", "finished", "finished"] && status.finished)
        #expect(status.runs.map(\.chunksComplete) == [2, 2, 2])
    }

    /// An unfinished run blocks only an import of another feed, which is told how to go on;
    /// --abandon-run leaves it (and what it imported) and starts the next run.
    @Test func anUnfinishedRunBlocksAnotherFeedUntilItIsAbandoned() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600).write(to: feed)
        let stopped = importer(dir, feed: feed)
        stopped.stopAfterSaves.store(2, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        let store = dir.file("store.sqlite")
        let other = dir.file("other.json")
        try FeedGenerator(records: 130).write(to: other)
        let error = #expect(throws: ImportError.self) { try importer(dir, feed: other).run() }
        #expect(error?.message.hasPrefix("\(store) has an unfinished import, run 1 of \(feed): the feed differs (") == true, "\(error?.message ?? "")")
        guard case .unfinishedRun(let inStore, let run, let runFeed, let reasons)? = error?.kind else { Issue.record("\(String(describing: error))"); return }
        #expect(inStore == store && run == 1 && runFeed == feed && reasons.count == 1)
        let kept = try PersistentStoreCoordinator(existingStoreAt: store).count("Photo")
        #expect(kept > 0)
        var abandon = importer(dir, feed: other).options
        abandon.abandonRun = true
        let report = try Importer(spec: Self.spec, options: abandon).run()
        #expect(report.run == 2 && report.abandonedRun == 1)
        #expect(try ImportStatus.read(store: store).runs.map(\.state) == ["abandoned", "finished"])
        #expect((report.counts["Photo"] ?? 0) >= max(130, kept), "run 1's photos stay")
    }

    /// A feed path that names no file is refused before the store records anything.
    @Test func aMistypedFeedPathLeavesTheStoreUntouched() throws {
        let dir = try TemporaryDirectory()
        let error = #expect(throws: ImportError.self) { try importer(dir, feed: dir.file("typo.json")).run() }
        #expect(error?.message == "cannot read the feed \(dir.file("typo.json")): no such file")
        #expect(!FileManager.default.fileExists(atPath: dir.file("store.sqlite")))
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 50).write(to: feed)
        #expect(try importer(dir, feed: feed).run().counts["Photo"] == 50)
    }
}

@Suite struct ConcurrentUniquingTests {
    /// Every chunk names every photographer: four workers race to create each of them,
    /// and each must end as exactly one row, with every photo linked to it.
    @Test func fourWorkersCreateEachPhotographerOnce() throws {
        let dir = try TemporaryDirectory()
        var lines: [String] = []
        for i in 0..<800 {
            let photographer = i % 20
            lines.append(#"{"id":"p\#(i)","views":\#(i),"photographer":{"id":"ph\#(photographer)","name":"Name \#(photographer)"}}"#)
        }
        let feed = dir.file("feed.json")
        try Data(("[" + lines.joined(separator: ",\n") + "]").utf8).write(to: URL(fileURLWithPath: feed))
        let report = try Importer(spec: ImporterTests.spec, options: .init(feed: feed, store: dir.file("store.sqlite"),
                                                                          workers: 4, saveEvery: 10, chunkSize: 40)).run()
        #expect(report.counts == ["Photo": 800, "Photographer": 20])
        let coordinator = try PersistentStoreCoordinator(model: ImporterTests.spec.model, path: dir.file("store.sqlite"))
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            for photographer in try context.fetch("Photographer") {
                #expect(photographer.objects(forKey: "photos").count == 40, "\(photographer.id?.stringValue ?? "?")")
            }
            #expect(try context.count(for: FetchRequest("Photo", predicate: try QueryPredicate(format: "whoTook = nil"))) == 0)
        }
    }
}

extension ImporterTests {
    /// The census of unmapped members is kept with each save: a run stopped and resumed
    /// counts every record once, as a clean run does.
    @Test(arguments: [1, 4, 8], [false, true])
    func aStoppedAndResumedRunCountsEachRecordsUnmappedMembersOnce(stopAfter: Int, objectPath: Bool) throws {
        func importer(_ dir: TemporaryDirectory, feed: String, store: String = "store.sqlite", workers: Int = 2) -> Importer {
            var options = Importer.Options(feed: feed, store: dir.file(store), workers: workers, saveEvery: 40, chunkSize: 100)
            options.objectPath = objectPath
            return Importer(spec: Self.spec, options: options)
        }
        let dir = try TemporaryDirectory()
        let lines = String(decoding: FeedGenerator(records: 600, seed: 5, ndjson: true).bytes(), as: UTF8.self)
            .split(separator: "\n").enumerated().map { index, line in
                (index % 3 == 0 ? #"{"camera":"c","# : "{") + (index % 7 == 0 ? #""extra":{"a":1},"# : "") + line.dropFirst()
            }
        let feed = try dir.write("feed.json", Array(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8))
        let expected = MemberCensus(unmapped: ["camera": 200, "extra": 86])
        let clean = try importer(dir, feed: feed, store: "clean.sqlite").run()
        #expect(clean.members == expected)
        #expect(clean.outcomes == RecordOutcomes(inserted: 600))
        let first = importer(dir, feed: feed, workers: 1)
        first.stopAfterSaves.store(stopAfter, ordering: .relaxed)
        #expect(throws: ImportError.self) { try first.run() }
        let midway = try ImportStatus.read(store: dir.file("store.sqlite")).latest
        #expect(midway.members.unmapped["camera", default: 0] > 0 && midway.members.unmapped["camera", default: 0] < 200, "\(midway.members)")
        // What the stopped process saved counts in the status, and in the run that finishes it
        // (the run's outcomes had been the last process's only).
        #expect(midway.outcomes == RecordOutcomes(inserted: midway.recordsDone) && midway.recordsDone > 0, "\(String(describing: midway.outcomes))")
        let resumed = try importer(dir, feed: feed, workers: 3).run()
        #expect(resumed.members == expected)
        #expect(resumed.outcomes == clean.outcomes, "\(String(describing: resumed.outcomes))")
        #expect(try ImportStatus.read(store: dir.file("store.sqlite")).latest.outcomes == clean.outcomes)
    }
}
