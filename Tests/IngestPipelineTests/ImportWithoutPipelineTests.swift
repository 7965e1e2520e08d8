import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// `ingest import` without --pipeline, as a user runs it (issue 40): a feed on standard
/// input, a feed without records, and members the inference sample did not reach.
@Suite struct ImportWithoutPipelineTests {
    /// `count` NDJSON records `{"id":i,"t":"t<i>"}`, those from `lateFrom` on with a `camera` too.
    static func feed(_ count: Int, lateFrom: Int = .max) -> [UInt8] {
        Array((0..<count).map { i in
            #"{"id":\#(i),"t":"t\#(i)""# + (i >= lateFrom ? #","camera":"C\#(i)"}"# : "}") + "\n"
        }.joined().utf8)
    }

    /// Names in `dir` left by the import besides the store and the files it keeps beside it.
    static func strays(_ dir: TemporaryDirectory, store: String) throws -> [String] {
        let kept = ["", ".lock", ".pipeline.json", ".rejects.ndjson", ".report.json", "-wal", "-shm"].map { (store as NSString).lastPathComponent + $0 }
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !kept.contains($0) }.sorted()
    }

    // MARK: - Standard input

    /// Found by probing: without --pipeline, standard input was refused. Its records are
    /// copied to a file first: inferred from (100 of them), then every one imported.
    @Test func aFeedOnStandardInputInfersAPipelineAndImportsEveryRecord() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("s.sqlite")
        let bytes = Self.feed(2_000)
        let outcome = try IngestBinary.run(["import", "-", "--store", store, "--sample", "100"], stdin: bytes)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.hasPrefix("""
            ingest: read standard input to its end (\(ByteCount.format(bytes.count))) into a file of Ingest's own in \(dir.path), to read a sample of its records before importing the same records; the file has no name and goes when the import ends
            ingest: no --pipeline: inferred one from the feed and kept it as \(store).pipeline.json (edit it and pass --pipeline to change the mapping)
            ingest infer: read 100 record(s); newline-delimited JSON

            """), "\(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("- → \(store): 2,000 records in "), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("\n  pipeline: inferred from this feed (\(store).pipeline.json)\n"), "\(outcome.stdout)")
        #expect(try storeRows(store, "SELECT count(*), min(id), max(id), max(t) FROM Record") == ["2000|0|1999|t999"])
        let status = try ImportStatus.read(store: store)
        #expect(status.latest.feed == "-" && status.latest.feedWasReadOnce)
        #expect(try Self.strays(dir, store: store) == [], "the copy of standard input is gone")
    }

    /// A named pipe cannot be copied in its place: refused, with the way that works.
    @Test func aFeedOnANamedPipeSaysToPipeItToStandardInput() throws {
        let dir = try TemporaryDirectory()
        let pipe = dir.file("feed.fifo")
        #expect(mkfifo(pipe, 0o600) == 0)
        let store = dir.file("s.sqlite")
        let outcome = try IngestBinary.run(["import", pipe, "--store", store])
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: a feed on a pipe (\(pipe)) needs --pipeline: inferring one reads the feed before the import does, and a pipe can be read only once. Pipe it to standard input instead (… | ingest import - --store \(store)), which Ingest copies to a file first\n")
    }

    // MARK: - A feed without records

    @Test(arguments: [false, true])
    func anEmptyArrayImportsNothingExitsZeroAndSaysSo(onStandardInput: Bool) throws {
        let dir = try TemporaryDirectory()
        let file = try dir.write("empty.json", Array("[]\n".utf8))
        let store = dir.file("s.sqlite")
        let feed = onStandardInput ? "-" : file
        let outcome = try IngestBinary.run(["import", feed, "--store", store], stdin: onStandardInput ? Array("[]".utf8) : nil)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "\(feed) → \(store): the feed holds no records: nothing to import, and no pipeline inferred; \(store) was not made\n")
        #expect(!FileManager.default.fileExists(atPath: store) && !FileManager.default.fileExists(atPath: store + ".pipeline.json"))
        let quiet = try IngestBinary.run(["import", feed, "--store", store, "--quiet"], stdin: onStandardInput ? Array("[]".utf8) : nil)
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(try Self.strays(dir, store: store) == ["empty.json"])
    }

    /// Inference comes before the store is touched: --delete-store with an empty feed leaves it.
    @Test func anEmptyFeedLeavesAStoreAsItWas() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("s.sqlite")
        let first = try IngestBinary.run(["import", try dir.write("books.ndjson", Self.feed(3)), "--store", store, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let empty = try dir.write("none.json", Array("[]".utf8))
        let outcome = try IngestBinary.run(["import", empty, "--store", store, "--delete-store"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "\(empty) → \(store): the feed holds no records: nothing to import, and no pipeline inferred; \(store) is as it was\n")
        #expect(try storeRows(store, "SELECT count(*) FROM Book") == ["3"])
    }

    // MARK: - Members after the sample

    /// Found by probing: a member first seen after the sample was left out with a line in
    /// the summary, exit 0 (and nothing at all with --quiet). The run fails, naming the
    /// members and the command that imports them, and that command does.
    @Test func aMemberFirstSeenAfterTheSampleFailsTheRunWithTheCommandThatImportsIt() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("shots.ndjson", Self.feed(10, lateFrom: 7))
        let store = dir.file("s.sqlite")
        let outcome = try IngestBinary.run(["import", feed, "--store", store, "--sample", "5", "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: 1 member path(s) first appear after the 5 record(s) the pipeline was inferred from, so the run imported its records without them: camera (3 records). To import them too, infer from every record and import the feed anew: ingest import \(feed) --store \(store) --sample 10 --delete-store (it deletes \(store), which holds this run alone)\n")
        #expect(try storeRows(store, "SELECT count(*) FROM Shot") == ["10"])
        let again = try IngestBinary.run(["import", feed, "--store", store, "--sample", "10", "--delete-store", "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try storeRows(store, "SELECT id, camera FROM Shot WHERE id >= 6 ORDER BY id") == ["6|NULL", "7|C7", "8|C8", "9|C9"])
    }

    /// Past ten paths the rest are counted, and rejects are said too (the failure comes first).
    @Test func manyLateMembersAreListedAsTheSummaryListsThemAndRejectsSaid() throws {
        let dir = try TemporaryDirectory()
        let late = (0..<12).map { #""m\#($0)":\#($0)"# }.joined(separator: ",")
        let feed = try dir.write("shots.ndjson", Self.feed(3) + Array(#"{"id":3,"t":"t3",\#(late)}"#.utf8) + Array("\n7\n".utf8))
        let store = dir.file("s.sqlite")
        let outcome = try IngestBinary.run(["import", feed, "--store", store, "--sample", "3", "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: 12 member path(s) first appear after the 3 record(s) the pipeline was inferred from, so the run imported its records without them: m0 (1 record), m1 (1 record), m10 (1 record), m11 (1 record), m2 (1 record), m3 (1 record), m4 (1 record), m5 (1 record), m6 (1 record), m7 (1 record) and 2 more (\(store).report.json lists them). To import them too, infer from every record and import the feed anew: ingest import \(feed) --store \(store) --sample 5 --delete-store (it deletes \(store), which holds this run alone). 1 record(s) were rejected too (see \(store).rejects.ndjson)\n")
    }

    @Test func onStandardInputTheCommandPipesTheFeedAgain() throws {
        let dir = try TemporaryDirectory()
        let bytes = Self.feed(10, lateFrom: 7)
        let store = dir.file("s.sqlite")
        let outcome = try IngestBinary.run(["import", "-", "--store", store, "--sample", "5"], stdin: bytes)
        #expect(outcome.status == 1)
        // The summary lists them too; the failure comes last.
        #expect(outcome.stdout.contains("  not mapped, so not imported: 1 member path(s)"), "\(outcome.stdout)")
        #expect(outcome.stderr.hasSuffix("ingest: 1 member path(s) first appear after the 5 record(s) the pipeline was inferred from, so the run imported its records without them: camera (3 records). To import them too, infer from every record and import the feed anew: … | ingest import - --store \(store) --sample 10 --delete-store (it deletes \(store), which holds this run alone)\n"),
                "\(outcome.stderr)")
        let again = try IngestBinary.run(["import", "-", "--store", store, "--sample", "10", "--delete-store", "--quiet"], stdin: bytes)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try storeRows(store, "SELECT count(camera) FROM Record") == ["3"])
    }

    /// A store whose earlier runs stay: the members are added by evolving the pipeline, and
    /// the feed imported again updates the records by their key.
    @Test func inAStoreWithEarlierRunsTheCommandEvolvesAndImportsAgain() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("day1"), withIntermediateDirectories: false)
        let store = dir.file("s.sqlite")
        let first = try IngestBinary.run(["import", try dir.write("day1/shots.ndjson", Self.feed(3)), "--store", store, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        // The kept pipeline gone, the next import infers one again (the same model).
        try FileManager.default.removeItem(atPath: store + ".pipeline.json")
        let feed = try dir.write("shots.ndjson", Self.feed(10, lateFrom: 7))
        let outcome = try IngestBinary.run(["import", feed, "--store", store, "--sample", "5", "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.hasSuffix("To import them too, add them from a sample of every record and import the feed again, updating what this run imported: ingest import \(feed) --store \(store) --sample 10 --evolve --again\n"),
                "\(outcome.stderr)")
        let again = try IngestBinary.run(["import", feed, "--store", store, "--sample", "10", "--evolve", "--again", "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try storeRows(store, "SELECT count(*), count(camera) FROM Shot") == ["10|3"])
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func onPostgreSQLStandardInputAndLateMembersGoTheSameWay() throws {
        let server = try PostgresServer.database()
        let url = server.url
        // First, while the database has no run (whose pipeline an import would use).
        let empty = try IngestBinary.run(["import", "-", "--store", url], stdin: Array("[]".utf8))
        #expect(empty.status == 0 && empty.stdout == "- → \(url): the feed holds no records: nothing to import, and no pipeline inferred; \(url) is as it was\n",
                "\(empty.stdout)\(empty.stderr)")
        let bytes = Self.feed(10, lateFrom: 7)
        let outcome = try IngestBinary.run(["import", "-", "--store", url, "--sample", "5", "--quiet"], stdin: bytes)
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: 1 member path(s) first appear after the 5 record(s) the pipeline was inferred from, so the run imported its records without them: camera (3 records). To import them too, add them from a sample of every record and import the feed again, updating what this run imported: … | ingest import - --store \(ShellWord.quoted(url)) --sample 10 --evolve --again\n")
        let again = try IngestBinary.run(["import", "-", "--store", url, "--sample", "10", "--evolve", "--again", "--quiet"], stdin: bytes)
        #expect(again.status == 0, "\(again.stderr)")
        let model = try #require(PostgresImport.latestPipeline(url: try PostgresURL(url))).text
        let rows = try PostgresImportTests.postgresRows(url, try PipelineSpec.parse(Array(model.utf8)).model)["Record"] ?? []
        #expect(rows == (0..<10).map { "\($0)|t\($0)|" + ($0 >= 7 ? "C\($0)" : "NULL") }.sorted())
    }
}
