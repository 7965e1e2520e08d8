import Synchronization
import Foundation
@testable import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Faults around an import: a second importer, a damaged store, changed chunks,
/// awkward names and paths.
@Suite struct FaultTests {
    static var spec: PipelineSpec { RecordMapperTests.spec }
    static var pipeline: String { PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path }

    func importer(feed: String, store: String, chunks: String? = nil) -> Importer {
        Importer(spec: Self.spec, options: .init(feed: feed, store: store, chunks: chunks, workers: 2, saveEvery: 50, chunkSize: 100))
    }

    @Test func aSecondImporterIsRefusedNamingTheHolderAndALockLeftByADeadRunIsTakenOver() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 300).write(to: feed)
        let store = dir.file("store.sqlite")
        let held = try ImportLock(store: store)
        let error = #expect(throws: ImportError.self) { try importer(feed: feed, store: store).run() }
        let message = try #require(error?.message)
        #expect(message.hasPrefix("\(store) is being imported by another process (pid \(getpid()) on "))
        guard case .storeBusy(store, _)? = error?.kind else { Issue.record("\(message)"); return }
        #expect(!FileManager.default.fileExists(atPath: store), "the refused run touched nothing")
        held.release()

        // A lock file naming a process that is gone (nobody holds the flock): taken over.
        try Data(#"{"pid":999999,"host":"elsewhere","startedAt":"2026-01-01T00:00:00Z"}"#.utf8).write(to: URL(fileURLWithPath: store + ".lock"))
        let report = try importer(feed: feed, store: store).run()
        #expect(report.staleLock == "pid 999999 on elsewhere, started 2026-01-01T00:00:00Z")
        #expect(report.counts["Photo"] == 300)
        #expect(try importer(feed: feed, store: store).run().staleLock == nil, "a finished run leaves the lock file empty")
    }

    @Test func readersWorkWhileAnotherProcessImports() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 40_000).write(to: feed)
        let store = dir.file("store.sqlite")
        let running = try IngestBinary.start(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--workers", "2",
                                              "--quiet"])
        var sawProgress = false
        for _ in 0..<200 where !sawProgress {
            Thread.sleep(forTimeInterval: 0.05)
            let status = try IngestBinary.run(["status", store])
            if status.status == 0 && status.stdout.contains("import not finished") { sawProgress = true }
        }
        #expect(sawProgress, "status answered during the import")
        let second = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store])
        let query = try IngestBinary.run(["query", store, "Photographer", "--count"])
        let check = try IngestBinary.run(["status", store, "--check"])
        let first = IngestBinary.finish(running)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(second.status == 1)
        #expect(second.stderr.hasPrefix("ingest: \(store) is being imported by another process (pid \(running.process.processIdentifier) on "),
                "\(second.stderr)")
        #expect(query.status == 0 && Int(query.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil, "\(query.stderr)")
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }

    @Test func statusCheckPassesASoundStoreAndNamesEachKindOfDamage() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 300).write(to: feed)
        let store = dir.file("store.sqlite")
        _ = try Importer(spec: Self.spec, options: .init(feed: feed, store: store, workers: 2, saveEvery: 50, chunkSize: 100,
                                                         pipelinePath: Self.pipeline)).run()
        let sound = try IngestBinary.run(["status", store, "--check"])
        #expect(sound.status == 0)
        #expect(sound.stdout == "\(store): check passed (SQLite integrity, to-one references, uniqueness, value types, import marker)\n")

        // Damage it behind Ingest's back: a dangling to-one, a repeated unique key, a marker past its chunk.
        try SQLiteFile(store).execute(#"""
            BEGIN IMMEDIATE;
            UPDATE "Photo" SET "_whoTook" = 999999 WHERE "_pk" IN (SELECT "_pk" FROM "Photo" LIMIT 2);
            DROP INDEX "_unique_Photographer_0";
            INSERT INTO "Photographer" ("id", "name") SELECT "id", "name" FROM "Photographer" LIMIT 1;
            UPDATE "_ingest_metadata" SET value = '150' WHERE key = 'ingest.run.0001.chunk.chunk-000002.ndjson';
            COMMIT
            """#)
        let damaged = try IngestBinary.run(["status", store, "--check"])
        #expect(damaged.status == 1)
        #expect(damaged.stdout == """
            \(store): check found 4 problem(s):
              - 2 Photo row(s) have whoTook pointing at no Photographer row
              - Photographer: the unique index of (id) is missing (the next import's upserts need it)
              - 1 value(s) of Photographer.id appear in more than one row
              - run 1 marker: chunk-000002.ndjson says 150 records done, but it holds 100

            """)
    }

    @Test func statusOnAFileThatIsNoStoreSaysSo() throws {
        let dir = try TemporaryDirectory()
        let text = try dir.write("notes.txt", Array("hello, not a database\n".utf8))
        let plain = dir.file("plain.sqlite")
        try SQLiteFile(plain).execute("CREATE TABLE t (x)")
        for (path, reason) in [(text, "the file is not a SQLite database"), (plain, "it has no Ingest model in its metadata")] {
            for arguments in [["status", path], ["status", path, "--check"]] {
                let outcome = try IngestBinary.run(arguments)
                #expect(outcome.status == 1)
                #expect(outcome.stderr == "ingest: \(path) is not an Ingest store: \(reason)\n", "\(outcome.stderr)")
                #expect(!outcome.stderr.contains("Fatal error"))
            }
        }
    }

    /// After a finished split: a chunk edited (same size), one truncated and one deleted
    /// are noticed by their checksums and made again from the feed; the import ends as a
    /// clean one.
    @Test func chunksChangedAfterTheSplitAreMadeAgainFromTheFeed() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600).write(to: feed)
        _ = try importer(feed: feed, store: dir.file("clean.sqlite")).run()
        let store = dir.file("store.sqlite")
        let chunks = store + ".chunks/run-0001"
        _ = try Splitter(feedPath: feed, directory: chunks, options: SplitOptions(chunkSize: 100)).run()
        try Self.changeOneDigit(chunks + "/chunk-000003.ndjson")
        let four = try Data(contentsOf: URL(fileURLWithPath: chunks + "/chunk-000004.ndjson"))
        try four.prefix(10).write(to: URL(fileURLWithPath: chunks + "/chunk-000004.ndjson"))
        try FileManager.default.removeItem(atPath: chunks + "/chunk-000005.ndjson")
        let report = try importer(feed: feed, store: store).run()
        #expect(report.remadeChunks == ["chunk-000003.ndjson", "chunk-000004.ndjson", "chunk-000005.ndjson"])
        #expect(report.counts["Photo"] == 600)
        #expect(try FaultTests.photoIDs(store) == FaultTests.photoIDs(dir.file("clean.sqlite")))
        #expect(try ImportStatus.check(store: store).isEmpty)
    }

    /// During a split that has not finished, a chunk whose bytes changed on disk is caught
    /// by the worker's checksum before any of it is imported.
    @Test func aChunkChangedDuringAnUnfinishedSplitStopsTheRunWithTheWayOn() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600).write(to: feed)
        let store = dir.file("store.sqlite")
        let chunks = store + ".chunks/run-0001"
        let splitter = Splitter(feedPath: feed, directory: chunks, options: SplitOptions(chunkSize: 100))
        splitter.stopAfterChunks = 4
        #expect(throws: (any Error).self) { try splitter.run() }
        try Self.changeOneDigit(chunks + "/chunk-000003.ndjson")
        let error = #expect(throws: ImportError.self) { try importer(feed: feed, store: store).run() }
        #expect(error?.kind == .chunkChanged(path: "\(chunks)/chunk-000003.ndjson"))
        #expect(error?.message == "\(chunks)/chunk-000003.ndjson changed after the split (its checksum is not the manifest's)")
        try FileManager.default.removeItem(atPath: chunks + "/chunk-000003.ndjson")
        #expect(try importer(feed: feed, store: store).run().counts["Photo"] == 600)
        #expect(try ImportStatus.check(store: store).isEmpty)
    }

    /// The same size, other bytes: an unfinished run refuses it, with or without the
    /// chunks, until --abandon-run.
    @Test func aFeedChangedInPlaceIsRefusedOnResumeUnlessTheRunIsAbandoned() throws {
        let dir = try TemporaryDirectory()
        let (feed, store, chunks) = try stoppedAfterOneSave(in: dir)
        // Let the split finish, so the feed's checksum is recorded. The stopped run records it
        // only if its split ended before the stop, which a loaded machine may reorder: then it
        // is recorded here, as that split would have.
        _ = try Splitter(feedPath: feed, directory: chunks, options: SplitOptions(chunkSize: 100)).run()
        do {
            let coordinator = try PersistentStoreCoordinator(model: Self.spec.model, path: store)
            var run = try #require(try ImportMarker.runs(coordinator).last)
            if run.feedChecksum.isEmpty {
                run.feedChecksum = try Splitter.fullHash(feed)
                run.chunkCount = 3
                try ImportMarker.save(run, coordinator)
            }
        }
        try Self.changeOneDigit(feed)
        let withChunks = #expect(throws: ImportError.self) { try importer(feed: feed, store: store, chunks: chunks).run() }
        #expect(withChunks?.message.hasPrefix("\(store) has an unfinished import, run 1 of \(feed): the feed differs from the one the chunks were split from (") == true,
                "\(withChunks?.message ?? "")")
        try FileManager.default.removeItem(atPath: chunks)
        let withoutChunks = #expect(throws: ImportError.self) { try importer(feed: feed, store: store, chunks: chunks).run() }
        #expect(withoutChunks?.message.hasPrefix("\(store) has an unfinished import, run 1 of \(feed): the feed differs (same size, other content)") == true,
                "\(withoutChunks?.message ?? "")")
        var abandon = importer(feed: feed, store: store, chunks: chunks).options
        abandon.abandonRun = true
        #expect(try Importer(spec: Self.spec, options: abandon).run().counts["Photo"] == 300)
    }

    /// A run stopped before its split recorded the feed's checksum, its chunks gone, and
    /// the feed changed in place (same size): the chunks its saves imported come out
    /// different, and the resumed run stops before importing anything of the other feed.
    @Test func aFeedChangedInPlaceBeforeItsSplitFinishedIsRefusedOnResume() throws {
        let dir = try TemporaryDirectory()
        let (feed, store, chunks) = try stoppedAfterOneSave(in: dir)
        let coordinator = try PersistentStoreCoordinator(model: Self.spec.model, path: store)
        var run = try #require(try ImportMarker.runs(coordinator).last)
        let keys = ImportMarker.Keys(run: run.number)
        let before = try ImportMarker.progress(coordinator, keys)
        #expect(try ImportMarker.sums(coordinator, keys).keys.sorted() == before.keys.sorted())
        // As if the stop came before the split ended: no feed checksum, no chunk count.
        run.feedChecksum = ""
        run.chunkCount = 0
        try ImportMarker.save(run, coordinator)
        try FileManager.default.removeItem(atPath: chunks)
        let original = try Data(contentsOf: URL(fileURLWithPath: feed))
        // Every 7 becomes an 8, so whichever chunk the stopped run saved comes out different.
        try Data(original.map { $0 == UInt8(ascii: "7") ? UInt8(ascii: "8") : $0 }).write(to: URL(fileURLWithPath: feed))
        let photos = try coordinator.count("Photo")
        let error = #expect(throws: ImportError.self) { try importer(feed: feed, store: store, chunks: chunks).run() }
        #expect(error?.message.hasPrefix("\(store) has an unfinished import, run 1 of \(feed): the feed differs from the one the run's saves imported (chunk ") == true,
                "\(error?.message ?? "")")
        #expect(try coordinator.count("Photo") == photos)
        #expect(try ImportMarker.progress(coordinator, keys) == before)
        // The feed it was: the run resumes and finishes.
        try original.write(to: URL(fileURLWithPath: feed))
        #expect(try importer(feed: feed, store: store, chunks: chunks).run().counts["Photo"] == 300)
    }

    /// A 300-record feed whose import into a store stopped after its first save (as a crash
    /// would), with its chunks in `chunks`.
    func stoppedAfterOneSave(in dir: TemporaryDirectory) throws -> (feed: String, store: String, chunks: String) {
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 300).write(to: feed)
        let store = dir.file("store.sqlite")
        let chunks = dir.file("chunks")
        let stopped = importer(feed: feed, store: store, chunks: chunks)
        stopped.stopAfterSaves.store(1, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        return (feed, store, chunks)
    }

    /// Same size, other bytes: the first 7 in the file becomes an 8.
    static func changeOneDigit(_ path: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let digit = try #require(bytes.firstIndex(of: UInt8(ascii: "7")))
        bytes[digit] = UInt8(ascii: "8")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func photoIDs(_ store: String) throws -> [String: String] {
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store))
        return try context.performAndWait {
            var photos: [String: String] = [:]
            for photo in try context.fetch("Photo") {
                photos[photo["id"]!.stringValue!] = photo.object(forKey: "whoTook")?["id"]?.stringValue ?? "-"
            }
            return photos
        }
    }

    /// SQL keywords, quotes, spaces and non-ASCII letters as entity and attribute names,
    /// and a store, chunk directory and feed under a path with spaces and unicode.
    @Test func awkwardNamesAndPathsWorkAndInjectNothing() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.file("Bilder für \"Ausstellung\" 2026")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let specText = #"""
        { "model": { "entities": [
            { "name": "Select", "attributes": [ { "name": "from", "type": "string", "optional": false },
                                                { "name": "a \"quoted\" name", "type": "string" },
                                                { "name": "größe; DROP TABLE x", "type": "int64" } ],
              "relationships": [ { "name": "order", "destination": "Group By", "inverse": "where" } ],
              "unique": [["from"]] },
            { "name": "Group By", "attributes": [ { "name": "key", "type": "string", "optional": false } ],
              "relationships": [ { "name": "where", "destination": "Select", "inverse": "order", "toMany": true } ],
              "unique": [["key"]] } ] },
          "feed": {}, "record": "Select",
          "mappings": {
            "Select": { "attributes": { "from": "id", "a \"quoted\" name": "q", "größe; DROP TABLE x": "n" },
                        "relationships": { "order": { "from": "g" } } },
            "Group By": { "attributes": { "key": "k" } } } }
        """#
        let pipeline = try dir.write("odd.json", Array(specText.utf8))
        let spec = try PipelineSpec.load(path: pipeline)
        let feed = folder + "/fëed 1.json"
        try Data(#"[{"id":"1","q":"it's \"x\"","n":5,"g":{"k":"a"}},{"id":"2","q":"'; DROP TABLE \"Select\"; --","n":6,"g":"a"}]"#.utf8)
            .write(to: URL(fileURLWithPath: feed))
        let store = folder + "/störe 1.sqlite"
        let report = try Importer(spec: spec, options: .init(feed: feed, store: store, chunks: folder + "/chünks dir", workers: 2)).run()
        #expect(report.counts == ["Select": 2, "Group By": 1])
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
        let context = ObjectContext(coordinator: coordinator)
        try context.performAndWait {
            let rows = try context.fetch(FetchRequest("Select", sortDescriptors: [FetchSortDescriptor("from")]))
            #expect(rows.map { $0["a \"quoted\" name"] } == [.string(#"it's "x""#), .string(#"'; DROP TABLE "Select"; --"#)])
            #expect(rows.map { $0["größe; DROP TABLE x"] } == [.int(5), .int(6)])
            #expect(rows.map { $0.object(forKey: "order")?["key"] } == [.string("a"), .string("a")])
        }
        #expect(try ImportStatus.check(store: store).isEmpty)
        #expect(FileManager.default.fileExists(atPath: store + ".rejects.ndjson"))
    }

    @Test func aChunkDirectoryThatIsASymbolicLinkWorksAndIsSaidToBeOne() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 50).write(to: feed)
        let elsewhere = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("chunks"), withDestinationPath: elsewhere)
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", dir.file("store.sqlite"),
                                            "--chunks", dir.file("chunks"), "--keep-chunks"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("  chunks: \(dir.file("chunks")) is a symbolic link; the chunk files are in \(elsewhere)\n"))
        #expect(FileManager.default.fileExists(atPath: elsewhere + "/manifest.json"))
    }

    @Test func aChunkDirectoryThatCannotBeWrittenGetsAClearMessage() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 50).write(to: feed)
        let blocker = try dir.write("not-a-directory", Array("x".utf8))
        let error = #expect(throws: (any Error).self) {
            try importer(feed: feed, store: dir.file("store.sqlite"), chunks: blocker + "/chunks").run()
        }
        #expect("\(error!)" == "cannot create directory \(blocker)/chunks: Not a directory", "\(error!)")
    }
}

@Suite struct ExtremeValueTests {
    @Test func theSmallestInt64IsStoredExactly() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"[{"id":"min","views":-9223372036854775808},{"id":"max","views":"9223372036854775807"}]"#.utf8))
        let store = dir.file("store.sqlite")
        let report = try Importer(spec: FaultTests.spec, options: .init(feed: feed, store: store, workers: 1)).run()
        #expect(report.counts["Photo"] == 2 && report.rejected == 0)
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store))
        try context.performAndWait {
            let views = try context.fetch(FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("id")])).map { $0["views"] }
            #expect(views == [.int(.max), .int(.min)])
        }
    }
}
