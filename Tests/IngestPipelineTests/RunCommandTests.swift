import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// Runs as the command line shows them: exit statuses, the flags that abandon or delete,
/// a feed read from standard input, and `status --check` on valid nested data.
@Suite struct RunCommandTests {
    static let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    func ndjson(_ lines: [String]) -> [UInt8] { Array(("[" + lines.joined(separator: ",\n") + "]\n").utf8) }

    @Test func exitStatusSaysWhetherRecordsWereRejected() throws {
        let dir = try TemporaryDirectory()
        let clean = try dir.write("clean.json", ndjson([#"{"id":"a"}"#, #"{"id":"b"}"#]))
        let some = try dir.write("some.json", ndjson([#"{"id":"c"}"#, #"{"title":"no id"}"#]))
        let none = try dir.write("none.json", ndjson([#"{"title":"no id"}"#, #"{"views":"lots"}"#]))
        func run(_ feed: String, _ extra: [String] = []) throws -> IngestBinary.Outcome {
            try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", dir.file("store.sqlite"), "--quiet"] + extra)
        }
        #expect(try run(clean).status == 0)
        let rejected = try run(some)
        #expect(rejected.status == 3, "\(rejected.stderr)")
        let all = try run(none)
        #expect(all.status == 1)
        #expect(all.stderr == "ingest: every record this run read was rejected (2); see \(dir.file("store.sqlite")).rejects.ndjson for the reasons\n")
        #expect(try run(none, ["--max-rejects", "2"]).status == 3, "--max-rejects allows it")
    }

    @Test func deletingTheStoreTakesAFlagThatSaysSoAndIsConfirmed() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", ndjson([#"{"id":"a"}"#]))
        let store = dir.file("store.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"]).status == 0)
        let removed = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet", "--restart"])
        #expect(removed.status == 2)
        #expect(removed.stderr.contains("--restart was removed: it deleted the store without saying so."), "\(removed.stderr)")
        let deleted = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet", "--delete-store"])
        #expect(deleted.status == 0)
        #expect(deleted.stderr == "ingest: --delete-store: deleting \(store) and everything imported into it\n")
        #expect(try ImportStatus.read(store: store).runs.count == 1)
    }

    /// A feed read from standard input and stopped is continued by piping it in again;
    /// `resume` says exactly that instead of failing on a file named "-".
    @Test func aStdinImportIsContinuedByPipingTheFeedAgain() throws {
        let dir = try TemporaryDirectory()
        let feed = FeedGenerator(records: 600).bytes()
        let store = dir.file("store.sqlite")
        let running = try IngestBinary.start(["import", "-", "--pipeline", Self.pipeline, "--store", store, "--chunk-size", "100",
                                              "--save-every", "50", "--quiet", "--max-rejects", "0"], stdin: feed)
        let done = IngestBinary.finish(running)
        #expect(done.status == 0, "\(done.stderr)")
        // Make the run unfinished again behind its back (as a signal would leave it), then ask resume.
        var run = try #require(try ImportMarker.runs(PersistentStoreCoordinator(existingStoreAt: store)).first)
        run.state = .running
        try ImportMarker.save(run, PersistentStoreCoordinator(existingStoreAt: store))
        let resume = try IngestBinary.run(["resume", store])
        #expect(resume.status == 1)
        #expect(resume.stderr == "ingest: run 1 read its feed from standard input, which cannot be read again from here, and \(store).chunks/run-0001 holds no finished split of it. Pipe the same feed in again: … | ingest import - --pipeline \(Self.pipeline) --store \(store) (the records already imported are skipped)\n")
        let again = try IngestBinary.run(["import", "-", "--pipeline", Self.pipeline, "--store", store, "--chunk-size", "100", "--quiet"],
                                         stdin: feed)
        #expect(again.status == 0, "\(again.stderr)")
        let status = try ImportStatus.read(store: store)
        #expect(status.runs.count == 1 && status.finished && status.counts["Photo"] == 600)
    }

    /// A feed from standard input stopped after its split finished: the chunk files hold
    /// all of it, so `resume` goes on from them without the feed (found by probing: it
    /// asked for the feed to be piped in again).
    @Test func aStdinImportStoppedAfterItsSplitResumesFromItsChunkFiles() throws {
        let (dir, store, feed) = try stoppedStdinImportWithAFinishedSplit()
        defer { withExtendedLifetime(dir) {} }
        let resumed = try IngestBinary.run(["resume", store, "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let status = try ImportStatus.read(store: store)
        #expect(status.finished && status.runs.count == 1 && status.counts["Photo"] == feed.records)
        #expect(status.runs[0].recordsDone == feed.records)
    }

    /// The same through a named pipe that is gone by the resume (found by probing: `<(…)`
    /// feeds were asked for again, their /dev/fd path no longer there).
    @Test func aNamedPipeImportStoppedAfterItsSplitResumesWithThePipeGone() throws {
        let (dir, store, feed) = try stoppedStdinImportWithAFinishedSplit(fifo: true)
        defer { withExtendedLifetime(dir) {} }
        let resumed = try IngestBinary.run(["resume", store, "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let status = try ImportStatus.read(store: store)
        #expect(status.finished && status.counts["Photo"] == feed.records && status.runs[0].recordsDone == feed.records)
    }

    /// The same, with chunk files gone: `resume` names them and says to pipe the feed in again,
    /// which finishes the run.
    @Test func aStdinImportMissingAChunkFileAsksForTheFeedAgain() throws {
        let (dir, store, feed) = try stoppedStdinImportWithAFinishedSplit()
        defer { withExtendedLifetime(dir) {} }
        let directory = store + ".chunks/run-0001"
        // Two chunk files apart: each named on its own, not every file after the first.
        try FileManager.default.removeItem(atPath: directory + "/chunk-000058.ndjson")
        try FileManager.default.removeItem(atPath: directory + "/chunk-000060.ndjson")
        let resume = try IngestBinary.run(["resume", store, "--quiet"])
        #expect(resume.status == 1)
        #expect(resume.stderr == "ingest: run 1 read its feed from standard input, and \(directory) lacks 2 chunk file(s) of its finished split, or holds them changed (chunk-000058.ndjson, chunk-000060.ndjson), and without the feed they cannot be made again. Pipe the same feed in again: … | ingest import - --pipeline \(Self.pipeline) --store \(store) (the records already imported are skipped)\n")
        let again = try IngestBinary.run(["import", "-", "--pipeline", Self.pipeline, "--store", store, "--chunk-size", "1000", "--quiet"],
                                         stdin: feed.bytes)
        #expect(again.status == 0, "\(again.stderr)")
        let status = try ImportStatus.read(store: store)
        #expect(status.finished && status.counts["Photo"] == feed.records)
    }

    /// An import from standard input stopped by SIGINT once its split has finished, while its
    /// workers still import (small saves keep them at it long after the split).
    /// `fifo`: the feed comes through a named pipe (as `<(…)` gives one), gone after the stop.
    private func stoppedStdinImportWithAFinishedSplit(fifo: Bool = false) throws -> (TemporaryDirectory, store: String, feed: (bytes: [UInt8], records: Int)) {
        let dir = try TemporaryDirectory()
        let records = 60_000
        let bytes = FeedGenerator(records: records, seed: 9).bytes()
        let store = dir.file("store.sqlite")
        let source = fifo ? dir.file("feed.fifo") : "-"
        if fifo {
            #expect(mkfifo(source, 0o600) == 0)
            Thread.detachNewThread {
                guard let pipe = FileHandle(forWritingAtPath: source) else { return }
                pipe.write(Data(bytes))
                try? pipe.close()
            }
        }
        let running = try IngestBinary.start(["import", source, "--pipeline", Self.pipeline, "--store", store, "--chunk-size", "1000",
                                              "--save-every", "20", "--workers", "1"], stdin: fifo ? nil : bytes)
        let manifest = store + ".chunks/run-0001/" + SplitManifest.fileName
        while running.process.isRunning && !FileManager.default.fileExists(atPath: manifest) { usleep(1_000) }
        try #require(running.process.isRunning, "the import finished before its split was seen to finish")
        kill(running.process.processIdentifier, SIGINT)
        let stopped = IngestBinary.finish(running)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(stopped.stderr.hasSuffix("continue with: ingest resume \(store) (the run's split finished: its chunk files in \(store).chunks/run-0001 hold the rest of the feed)\n"),
                "\(stopped.stderr)")
        #expect(try !ImportStatus.read(store: store).finished)
        if fifo { try FileManager.default.removeItem(atPath: source) }
        return (dir, store, (bytes, records))
    }

    /// Posts that quote posts: the record entity has more rows than there are records,
    /// and the check must call that sound.
    @Test func statusCheckPassesAStoreWithNestedObjectsOfTheRecordEntity() throws {
        let text = """
        { "model": { "entities": [
            { "name": "Post", "attributes": [ { "name": "id", "type": "int64", "optional": false }, { "name": "text", "type": "string" } ],
              "relationships": [ { "name": "quoted", "destination": "Post", "inverse": "quotedBy" },
                                 { "name": "quotedBy", "destination": "Post", "inverse": "quoted", "toMany": true } ],
              "unique": [["id"]] } ] },
          "feed": { "ndjson": true }, "record": "Post",
          "mappings": { "Post": { "attributes": { "id": "id", "text": "text" }, "relationships": { "quoted": "quoted" } } } }
        """
        let spec = try PipelineSpec.parse(Array(text.utf8))
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array("""
            {"id":1,"text":"a","quoted":{"id":100,"text":"quoted one"}}
            {"id":2,"text":"b","quoted":{"id":101,"text":"quoted two","quoted":{"id":102}}}
            {"id":3,"quoted":1}

            """.utf8))
        let store = dir.file("store.sqlite")
        let report = try Importer(spec: spec, options: .init(feed: feed, store: store)).run()
        #expect(report.counts["Post"] == 6 && report.imported == 3)
        #expect(try ImportStatus.check(store: store) == [])
    }

    @Test func aGzipFeedImportsFromAFileOrAPipe() throws {
        let dir = try TemporaryDirectory()
        let gz = PipelineSpecTests.root.appendingPathComponent("Fixtures/feeds/photos-10.json.gz").path
        let file = try IngestBinary.run(["import", gz, "--pipeline", Self.pipeline, "--store", dir.file("file.sqlite"), "--quiet"])
        #expect(file.status == 0, "\(file.stderr)")
        let piped = try IngestBinary.run(["import", "-", "--pipeline", Self.pipeline, "--store", dir.file("pipe.sqlite"), "--quiet"],
                                         stdin: Array(try Data(contentsOf: URL(fileURLWithPath: gz))))
        #expect(piped.status == 0, "\(piped.stderr)")
        for store in ["file.sqlite", "pipe.sqlite"] {
            #expect(try PersistentStoreCoordinator(existingStoreAt: dir.file(store)).count("Photo") == 10)
        }
        // Run again: the same feed is a new run that changes nothing.
        let again = try Importer(spec: try PipelineSpec.load(path: Self.pipeline), options: .init(feed: gz, store: dir.file("file.sqlite"))).run()
        #expect(again.run == 2 && again.outcomes?.unchanged == 10)
    }
}

/// Stores filled before imports had runs keep their one import as run 1.
@Suite struct SingleImportStoreTests {
    @Test func aStoreFromBeforeRunsReadsAsRunOneAndTakesTheNextFeed() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 150).write(to: feed)
        let store = dir.file("store.sqlite")
        let spec = try PipelineSpec.load(path: RunCommandTests.pipeline)
        _ = try Importer(spec: spec, options: .init(feed: feed, store: store, chunkSize: 100)).run()
        // Rewrite the metadata as an earlier version left it: one import, unnumbered.
        let coordinator = try PersistentStoreCoordinator(existingStoreAt: store)
        try coordinator.renameMetadata(withPrefix: "ingest.run") { key in
            if key.hasPrefix("ingest.run.0001.chunk.") { return "ingest.chunk." + key.dropFirst("ingest.run.0001.chunk.".count) }
            return nil
        }
        try coordinator.renameMetadata(withPrefix: "ingest.runs.0001") { _ in "ingest.unused" }
        let context = ObjectContext(coordinator: coordinator, name: "old")
        struct Old: Encodable { var feedByteSize: Int; var pipelineSHA256: String; var chunks: Int; var chunkSize: Int }
        struct Paths: Encodable { var feed: String; var chunks: String }
        try context.performAndWait {
            try context.setMetadata(Old(feedByteSize: 1, pipelineSHA256: spec.hash, chunks: 2, chunkSize: 100), forKey: "ingest.import")
            try context.setMetadata(Paths(feed: feed, chunks: dir.file("gone")), forKey: "ingest.run")
            try context.save()
        }
        let status = try ImportStatus.read(store: store)
        #expect(status.runs.count == 1)
        #expect(status.runs[0].number == 1 && status.runs[0].state == "finished" && status.runs[0].recordsDone == 150)
        let next = try Importer(spec: spec, options: .init(feed: feed, store: store, chunkSize: 100)).run()
        #expect(next.run == 2 && next.outcomes?.unchanged == 150)
    }
}

/// The libraries say what is wrong; the command line adds what to type next.
@Suite struct AdviceTests {
    /// A store with run 1 of a 600-record feed stopped after its first save, by `pipeline`.
    func stoppedRun(in dir: TemporaryDirectory, pipeline: String) throws -> (feed: String, store: String) {
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 600).write(to: feed)
        let store = dir.file("store.sqlite")
        let stopped = Importer(spec: try PipelineSpec.load(path: pipeline),
                               options: .init(feed: feed, store: store, saveEvery: 50, chunkSize: 100, pipelinePath: pipeline))
        stopped.stopAfterSaves.store(1, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        return (feed, store)
    }

    /// Found by probing: resume of a store an import left empty (stopped before it made the
    /// store) said "not an Ingest store", though importing again works; it says so.
    @Test func resumingAStoreLeftEmptySaysToImport() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.write("empty.sqlite", [])
        let resumed = try IngestBinary.run(["resume", store])
        #expect(resumed.status == 1)
        #expect(resumed.stderr == "ingest: \(store) holds no import yet (an import stopped before its store was made leaves it so): start one with ingest import FEED --store \(store)\n",
                "\(resumed.stderr)")
    }

    /// Found by probing: with the pipeline edited after a stop, import sent the user to a
    /// resume that then told them to put the (unchanged) feed back; both name the pipeline.
    @Test func aPipelineEditedAfterAStopIsNamedAsWhatToPutBack() throws {
        let dir = try TemporaryDirectory()
        let pipeline = try dir.write("p.json", Array(try String(contentsOfFile: RunCommandTests.pipeline, encoding: .utf8).utf8))
        let (feed, store) = try stoppedRun(in: dir, pipeline: pipeline)
        try Data(try String(contentsOfFile: pipeline, encoding: .utf8)
            .replacingOccurrences(of: #""title": "title""#, with: #""title": "subtitle""#).utf8).write(to: URL(fileURLWithPath: pipeline))
        let refused = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store, "--chunk-size", "100", "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasSuffix(": the pipeline differs. Continue it with the pipeline it started with (put the file back as it was): ingest resume \(store); or pass --abandon-run to leave run 1 as it is (what it imported stays) and import with this pipeline as run 2\n"),
                "\(refused.stderr)")
        let resumed = try IngestBinary.run(["resume", store, "--quiet"])
        #expect(resumed.status == 1)
        #expect(resumed.stderr.contains("run 1 cannot go on: the pipeline differs. Put its pipeline \(pipeline) back as it was and run ingest resume \(store) again"),
                "\(resumed.stderr)")
    }

    @Test func theCommandLineTurnsErrorsIntoAdvice() throws {
        let dir = try TemporaryDirectory()
        let (feed, store) = try stoppedRun(in: dir, pipeline: RunCommandTests.pipeline)
        let other = dir.file("other.json")
        try FeedGenerator(records: 30).write(to: other)
        let refused = try IngestBinary.run(["import", other, "--pipeline", RunCommandTests.pipeline, "--store", store, "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasSuffix(". Continue it with: ingest resume \(store); or pass --abandon-run to leave run 1 as it is (what it imported stays) and import this feed as run 2\n"),
                "\(refused.stderr)")
        let split = try IngestBinary.run(["split", other, "--out", dir.file("chunks")])
        #expect(split.status == 0)
        let again = try IngestBinary.run(["split", feed, "--out", dir.file("chunks")])
        #expect(again.stderr.contains("; choose another --out directory, or pass --force to split this feed into it from the start"), "\(again.stderr)")
    }
}

extension RunCommandTests {
    /// A store missing an index its model needs fails the check, before an import
    /// fails on it ("ON CONFLICT clause does not match…").
    @Test func statusCheckFindsAMissingIndex() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", ndjson([#"{"id":"a","photographer":{"id":"p1","name":"Ann"}}"#]))
        let store = dir.file("store.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"]).status == 0)
        #expect(try ImportStatus.check(store: store) == [])
        try storeRowsExecute(store, #"DROP INDEX "_unique_Photographer_0"; DROP INDEX "_index_Photo_whoTook""#)
        let outcome = try IngestBinary.run(["status", store, "--check"])
        #expect(outcome.status == 1)
        #expect(outcome.stdout == """
            \(store): check found 2 problem(s):
              - Photo: the index _index_Photo_whoTook is missing (queries still work, slower)
              - Photographer: the unique index of (id) is missing (the next import's upserts need it)

            """, "\(outcome.stdout)")
    }
}

extension RunCommandTests {
    /// Every failure is one `ingest: …` line, naming what is wrong and where.
    @Test func messagesNameWhatIsWrongAndWhere() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", ndjson([#"{"id":"a"}"#]))
        let workers = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", dir.file("s.sqlite"), "--workers", "100000"])
        #expect(workers.status == 2)
        #expect(workers.stderr.hasPrefix("Error: --workers must be from 1 to 256 (each worker is a thread with its own context and connection"), "\(workers.stderr)")
        let model = try dir.write("bad.json", Array(#"{"model":{"entities":[{"name":"P","attributes":[{"name":"id","type":"strng"}]}]},"record":"P","mappings":{"P":{"attributes":{"id":"id"}}}}"#.utf8))
        let bad = try IngestBinary.run(["import", feed, "--pipeline", model, "--store", dir.file("s.sqlite")])
        #expect(bad.stderr == "ingest: \(model): pipeline.model: entities[0].attributes[0].type: 'strng' is not an attribute type (expected string, int16, int32, int64, double, bool, date, binary, uuid, decimal)\n")
        let unreachable = try IngestBinary.run(["query", "postgresql://nobody@127.0.0.1:1/x", "P"])
        #expect(unreachable.status == 1 && unreachable.stderr.hasPrefix("ingest: cannot connect to PostgreSQL at postgresql://nobody@127.0.0.1:1/x"), "\(unreachable.stderr)")
        // A damaged record of a run is named by its key and field, not Swift's decoding text.
        let store = dir.file("store.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"]).status == 0)
        try storeRowsExecute(store, #"UPDATE _ingest_metadata SET value = '{"number":"x"}' WHERE key = 'ingest.runs.0001'"#)
        let damaged = try IngestBinary.run(["status", store])
        #expect(damaged.stderr == "ingest: \(store): the store's record of an import (ingest.runs.0001 in _ingest_metadata) is damaged: number: expected a whole number; it is not what Ingest wrote\n")
        // A model edited into one no Ingest wrote is named by its field (it was called no Ingest
        // model at all), and a format from a later Ingest is refused, not read as this one's.
        let edited = dir.file("edited.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", edited, "--quiet"]).status == 0)
        try storeRowsExecute(edited, #"UPDATE _ingest_metadata SET value = replace(value, '"type":"string"', '"type":"strng"') WHERE key = '_model'"#)
        let badModel = try IngestBinary.run(["status", edited])
        #expect(badModel.status == 1 && badModel.stderr.hasPrefix("ingest: \(edited) is not an Ingest store: its model ('_model' in _ingest_metadata) is damaged: entities[0].attributes["),
                "\(badModel.stderr)")
        #expect(badModel.stderr.contains("'strng' is not an attribute type"))
        // A model edited to another type still decodes; the check finds the values it no longer describes.
        let retyped = dir.file("retyped.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", retyped, "--quiet"]).status == 0)
        #expect(try IngestBinary.run(["status", retyped, "--check"]).status == 0)
        try storeRowsExecute(retyped, #"UPDATE _ingest_metadata SET value = replace(value, '"name":"id","optional":false,"type":"string"', '"name":"id","optional":false,"type":"int64"') WHERE key = '_model'"#)
        let check = try IngestBinary.run(["status", retyped, "--check"])
        #expect(check.status == 1 && check.stdout.contains("Photo.id value(s) are not integer, as int64 values are stored (was the model edited?)"),
                "\(check.stdout)\(check.stderr)")
        let later = dir.file("later.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", later, "--quiet"]).status == 0)
        try storeRowsExecute(later, "UPDATE _ingest_metadata SET value = '999' WHERE key = '_formatVersion'")
        for command in [["status", later], ["query", later, "P"], ["import", feed, "--pipeline", Self.pipeline, "--store", later]] {
            let refused = try IngestBinary.run(command)
            #expect(refused.status == 1 && refused.stderr == "ingest: \(later) is not an Ingest store: it is in format 999, made by a later Ingest; this one reads format 2\n",
                    "\(command[0]): \(refused.stderr)")
        }
        // A record edited to hold another run's number (the largest made the next one overflow: a trap).
        let second = dir.file("second.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", second, "--quiet"]).status == 0)
        try storeRowsExecute(second, #"UPDATE _ingest_metadata SET value = replace(value, '"number":1', '"number":9223372036854775807') WHERE key = 'ingest.runs.0001'"#)
        for command in [["import", feed, "--pipeline", Self.pipeline, "--store", second], ["status", second]] {
            let edited = try IngestBinary.run(command)
            #expect(edited.status == 1 && edited.stderr == "ingest: \(second): the store's record of an import (ingest.runs.0001 in _ingest_metadata) is damaged: it holds run 9223372036854775807; it is not what Ingest wrote\n",
                    "\(command[0]): \(edited.stderr)")
        }
    }
}
