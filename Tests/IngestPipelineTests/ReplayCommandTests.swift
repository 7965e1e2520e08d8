import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Synchronization
import Testing
@testable import IngestPipeline

/// `ingest replay`: rejected records, fixed by the user with jq, imported again as a new
/// run; the rest of the store stays as it was, and the rejects file keeps what failed again.
@Suite struct ReplayCommandTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
    static let hasJQ = FileManager.default.isExecutableFile(atPath: "/usr/bin/jq")
    static let noJQ = Comment(rawValue: "jq is not installed (./run.sh test installs it as root: apt-get install -y jq)")

    /// A feed of 3,000 photos in which records 0, 30, 60, … 2,970 (100 of them) give their
    /// views as text; returns the ids of those records, by record number.
    static func badFeed(_ path: String) throws -> [Int: String] {
        try FeedGenerator(records: 3_000, seed: 21).write(to: path)
        var lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        var bad: [Int: String] = [:]
        let views = try Regex(#""views":"?[0-9]+"?"#)
        let id = try Regex(#""id":"([0-9]+)""#)
        for record in stride(from: 0, to: 3_000, by: 30) {
            let line = lines[record + 1]
            let match = try #require(line.firstMatch(of: views), "record \(record) has views: \(line)")
            lines[record + 1] = line.replacingCharacters(in: match.range, with: #""views":"bad \#(record)""#)
            bad[record] = String(try #require(line.firstMatch(of: id)?.output[1].substring))
        }
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return bad
    }

    /// Runs `jq -c FILTER INPUT > OUTPUT`, as a user fixing rejects would.
    static func jq(_ filter: String, _ input: String, to output: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/jq")
        process.arguments = ["-c", filter, input]
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "jq \(filter)")
    }

    /// The 60 of the 100 rejects whose record is under 1,800 get a whole number of views.
    static let fixSixty = "if .record < 1800 then .text |= (fromjson | .views = 7 | tojson) else . end"

    static func lines(_ path: String) throws -> [JSONValue] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    @Test(.enabled(if: hasJQ, noJQ))
    func replayingFixedRejectsImportsThemAndChangesNothingElse() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = dir.file("feed.json"), store = dir.file("s.sqlite"), rejects = store + ".rejects.ndjson"
        let bad = try Self.badFeed(feed)
        let imported = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", store, "--chunk-size", "700", "--quiet"])
        #expect(imported.status == 3, "\(imported.stderr)")
        let original = try Self.lines(rejects)
        #expect(original.count == 100)
        let photosBefore = Set(try storeRows(store, "SELECT * FROM Photo"))
        let photographersBefore = Set(try storeRows(store, "SELECT * FROM Photographer"))
        #expect(photosBefore.count == 2_900)

        try Self.jq(Self.fixSixty, rejects, to: dir.file("fixed.ndjson"))
        let replay = try IngestBinary.run(["replay", store, "--rejects", dir.file("fixed.ndjson"), "--workers", "2"])
        #expect(replay.status == 3, "40 rejected again: \(replay.stdout) \(replay.stderr)")
        #expect(replay.stdout.contains("replayed 100 rejected record(s): 60 imported, 40 rejected again"), "\(replay.stdout)")

        // Nothing that was there changed; the 60 fixed records are there, with the fixed value.
        let photosAfter = Set(try storeRows(store, "SELECT * FROM Photo"))
        #expect(photosBefore.isSubset(of: photosAfter))
        let fixedIDs = Set(bad.filter { $0.key < 1_800 }.values)
        #expect(Set(try storeRows(store, "SELECT id FROM Photo WHERE views = 7 AND _pk > (SELECT max(_pk) - 60 FROM Photo)")) == fixedIDs)
        #expect(photosAfter.count == 2_960)
        #expect(Set(try storeRows(store, "SELECT * FROM Photographer")).isSuperset(of: photographersBefore))

        // The rejects file holds the 40 left, each once, as run 2's, naming where it came from.
        let left = try Self.lines(rejects)
        #expect(left.count == 40)
        for line in left {
            let origin = try #require(line["replayOf"], "\(line)")
            let record = Int(try #require(origin["record"]?.int64Value))
            #expect(line["run"] == .number("2") && origin["run"] == .number("1") && record >= 1_800 && bad[record] != nil, "\(line)")
            #expect(origin["chunk"] == .number(String(record / 700 + 1)) && origin["index"] == .number(String(record % 700)), "\(line)")
            let was = try #require(original.first { $0["record"] == origin["record"] })
            #expect(line["text"] == was["text"], "an unfixed record is replayed as it was")
        }
        // The replay's files are gone; the user's file is as they left it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".replay-") }.isEmpty)
        #expect(try Self.lines(dir.file("fixed.ndjson")).count == 100)
        let status = try IngestBinary.run(["status", store])
        #expect(status.stdout.contains("replays 100 rejected record(s) of run 1; their old rejects went when it finished"), "\(status.stdout)")
        #expect(try IngestBinary.run(["status", store, "--check"]).status == 0)

        // Replaying what is left after fixing it too: all imported, no rejects, exit 0.
        try Self.jq(".text |= (fromjson | .views = 8 | tojson)", rejects, to: dir.file("rest.ndjson"))
        let rest = try IngestBinary.run(["replay", store, "--rejects", dir.file("rest.ndjson")])
        #expect(rest.status == 0, "\(rest.stdout) \(rest.stderr)")
        #expect(try Self.lines(rejects).isEmpty)
        #expect(try storeRows(store, "SELECT count(*) FROM Photo") == ["3000"])
    }

    @Test(arguments: [
        (#"{"run":1,"chunk":1,"index":1,"record":1,"reason":"x","text":"{}"}"#, "run 1, chunk 1, index 1 is not among"),
        (#"{"run":1,"chunk":1,"index":0,"record":0,"reason":"x","text":"  "}"#, "the record's text is empty"),
        (#"{"run":1,"chunk":1,"index":0,"record":0,"text":7}"#, "\"text\" is 7, not the record's text as a JSON string"),
        (#"{"run":1,"chunk":1,"index":0"#, "line 1: not JSON"),
    ])
    func aLineThatIsNotOneOfTheStoresRejectsStopsTheReplayBeforeItRecordsAnything(line: String, message: String) throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let store = dir.file("s.sqlite")
        try dir.write("feed.json", Array(#"[{"id":"1","views":"x"},{"id":"2","views":3}]"#.utf8))
        #expect(try IngestBinary.run(["import", dir.file("feed.json"), "--pipeline", Self.photos, "--store", store, "--quiet"]).status == 3)
        try dir.write("bad.ndjson", Array((line + "\n").utf8))
        let outcome = try IngestBinary.run(["replay", store, "--rejects", dir.file("bad.ndjson")])
        #expect(outcome.status == 1 && outcome.stderr.contains(message), "\(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".replay-") }.isEmpty)
        #expect(try ImportStatus.read(store: store).runs.count == 1)
        // The same reject twice is refused too.
        try dir.write("twice.ndjson", Array((try String(contentsOfFile: store + ".rejects.ndjson", encoding: .utf8) + String(contentsOfFile: store + ".rejects.ndjson", encoding: .utf8)).utf8))
        let repeated = try IngestBinary.run(["replay", store, "--rejects", dir.file("twice.ndjson")])
        #expect(repeated.status == 1 && repeated.stderr.contains("line 2: the same reject as line 1"), "\(repeated.stderr)")
    }

    /// Stopped after its first save, a replay keeps the rejects it replays (a record is never
    /// in neither place) and its files; another replay is refused; resumed, it finishes as
    /// one that never stopped.
    @Test func aStoppedReplayKeepsItsRejectsUntilItsResumeFinishesIt() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = dir.file("feed.json"), store = dir.file("s.sqlite")
        _ = try Self.badFeed(feed)
        let spec = try PipelineSpec.load(path: Self.photos)
        _ = try? Importer(spec: spec, options: .init(feed: feed, store: store, workers: 2, pipelinePath: Self.photos)).run()
        #expect(try ImportStatus.read(store: store).runs[0].rejected == 100)

        let replay = try Replay.load(store: store)
        #expect(replay.records.count == 100 && replay.originRuns == [1])
        var options = Importer.Options(feed: "", store: store, workers: 2, saveEvery: 10)
        options.chunkSize = 25
        let stopped = try Importer(replaying: replay, options: options)
        stopped.stopAfterSaves.store(1, ordering: .relaxed)
        #expect(throws: ImportError.self) { try stopped.run() }
        var status = try ImportStatus.read(store: store)
        #expect(status.runs.map(\.state) == ["finished", "running"] && status.runs[1].replayed?.records == 100)
        #expect(status.runs[0].rejected == 100, "the replayed rejects stay until the replay finishes")
        #expect(FileOps.isRegularFile(stopped.options.feed) && FileOps.isRegularFile(stopped.options.pipelinePath ?? ""))
        #expect(throws: ImportError.self) { try Replay.load(store: store) }

        let report = try Importer(resuming: Importer.Options(store: store, workers: 2)).run()
        #expect(report.replayed == 100 && report.rejected == 100, "nothing was fixed: all 100 are run 2's rejects now")
        status = try ImportStatus.read(store: store)
        #expect(status.runs.map(\.rejected) == [0, 100] && status.counts["Photo"] == 2_900)
        #expect(!FileManager.default.fileExists(atPath: stopped.options.feed) && !FileManager.default.fileExists(atPath: stopped.options.pipelinePath ?? ""))
        let lines = try Self.lines(store + ".rejects.ndjson")
        #expect(lines.count == 100 && lines.allSatisfy { $0["run"] == .number("2") && $0["replayOf"]?["run"] == .number("1") })
    }

    @Test(.enabled(if: PostgresServer.isAvailable && hasJQ, Comment(rawValue: PostgresServer.unavailableReason ?? (hasJQ ? "" : noJQ.rawValue))))
    func replayingFixedRejectsOnPostgreSQLImportsThemAndChangesNothingElse() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let url = try server.createDatabase("replay")
        let feed = dir.file("feed.json")
        let bad = try Self.badFeed(feed)
        let imported = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", url, "--chunk-size", "700", "--workers", "2", "--quiet"])
        #expect(imported.status == 3, "\(imported.stderr)")
        func rows(_ sql: String) throws -> Set<String> {
            Set(try server.psql(["-d", "replay", "-At", "-c", sql]).split(separator: "\n").map(String.init))
        }
        let photosBefore = try rows(#"SELECT p::text FROM "Photo" p"#)
        #expect(photosBefore.count == 2_900)

        let exported = try IngestBinary.run(["replay", url, "--export", dir.file("rejects.ndjson")])
        #expect(exported.status == 0 && exported.stdout.contains("wrote 100 reject(s)"), "\(exported.stdout) \(exported.stderr)")
        try Self.jq(Self.fixSixty, dir.file("rejects.ndjson"), to: dir.file("fixed.ndjson"))
        let replay = try IngestBinary.run(["replay", url, "--rejects", dir.file("fixed.ndjson"), "--workers", "2"])
        #expect(replay.status == 3, "\(replay.stdout) \(replay.stderr)")
        #expect(replay.stdout.contains("replayed 100 rejected record(s): 60 imported, 40 rejected again"), "\(replay.stdout)")

        let photosAfter = try rows(#"SELECT p::text FROM "Photo" p"#)
        #expect(photosBefore.isSubset(of: photosAfter) && photosAfter.count == 2_960)
        #expect(try rows(#"SELECT id FROM "Photo" WHERE views = 7"#) == Set(bad.filter { $0.key < 1_800 }.values))
        #expect(try rows("SELECT run || ':' || count(*) FROM _ingest_rejects GROUP BY run") == ["2:40"])
        try FileManager.default.removeItem(atPath: dir.file("rejects.ndjson"))
        #expect(try IngestBinary.run(["replay", url, "--export", dir.file("rejects.ndjson")]).status == 0)
        let left = try Self.lines(dir.file("rejects.ndjson"))
        #expect(left.count == 40 && left.allSatisfy { line in
            let record = line["replayOf"]?["record"]?.int64Value.map(Int.init) ?? -1
            return line["run"] == .number("2") && record >= 1_800 && bad[record] != nil
        })
        let status = try IngestBinary.run(["status", url])
        #expect(status.stdout.contains("replays 100 rejected record(s) of run 1; their old rejects went when it finished"), "\(status.stdout)")
        let replayFeed = try #require(status.stdout.firstMatch(of: try Regex(#"feed: (/[^ ]*ingest-replay-[^ ]*\.ndjson) \(the replay's"#))?.output[1].substring)
        #expect(!FileManager.default.fileExists(atPath: String(replayFeed)), "the replay's feed goes when its run finishes")
    }
}
