import Foundation
import IngestJSON
import IngestTestSupport
import Testing

/// `ingest import --dry-run`: the store and its files stay byte for byte as they were,
/// and what it prints is what the real import then does.
@Suite struct DryRunCommandTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    /// Every file of `dir` with its bytes.
    static func files(_ dir: TemporaryDirectory) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: dir.path)
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir.file(name), isDirectory: &isDirectory), !isDirectory.boolValue {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: dir.file(name)))
            } else {
                files[name + "/"] = Data()
            }
        }
        return files
    }

    /// The numbers of a summary's lines: "imported N and rejected N", "records: N inserted, N updated, N unchanged".
    static func numbers(_ text: String, _ patterns: [String]) throws -> [Int] {
        try patterns.map { pattern in
            let range = try #require(text.range(of: pattern, options: .regularExpression), "\(pattern) in \(text)")
            return Int(text[range].filter(\.isNumber))!
        }
    }

    @Test func aDryRunWritesNothingAndPrintsWhatTheRealImportThenDoes() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let store = dir.file("s.sqlite")
        let first = dir.file("first.json"), second = dir.file("second.json")
        try FeedGenerator(records: 6_000, seed: 9).write(to: first)
        // The same photos and more, each given twice (updates), and 5 records without their key.
        try FeedGenerator(records: 12_000, seed: 9, repeatKeys: 2).write(to: second)
        let text = try String(contentsOfFile: second, encoding: .utf8)
        try dir.write("second.json", Array(("[\n" + (0..<5).map { #"{"title":"no id \#($0)"},"# + "\n" }.joined() + text.dropFirst(2)).utf8))
        let imported = try IngestBinary.run(["import", first, "--pipeline", Self.photos, "--store", store, "--workers", "2"])
        #expect(imported.status == 0, "\(imported.stderr)")

        let before = try Self.files(dir)
        let dry = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", store, "--workers", "2", "--dry-run"])
        #expect(dry.status == 3, "rejects make exit status 3: \(dry.stdout) \(dry.stderr)")
        var after = try Self.files(dir)
        // Reading a store in WAL mode makes SQLite's shared-memory index and an empty log
        // beside it when they are not there (`ingest status` does too): nothing of the store.
        #expect(after.removeValue(forKey: "s.sqlite-wal").map(\.isEmpty) ?? true, "nothing logged to write")
        after["s.sqlite-shm"] = before["s.sqlite-shm"]
        let removed = after.removeValue(forKey: "s.sqlite.dry-run.rejects.ndjson")
        let rejects = try #require(removed)
        #expect(after == before, "changed: \(Set(after.keys).symmetricDifference(before.keys).sorted()), \(after.filter { before[$0.key] != $0.value }.keys.sorted())")
        let lines = String(decoding: rejects, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 5 && lines.allSatisfy { $0.contains("missing required value") }, "\(lines)")

        let said = try Self.numbers(dry.stdout, [#"would import [0-9,]+"#, #"reject [0-9,]+"#, #"[0-9,]+ inserted"#, #"[0-9,]+ updated"#, #"[0-9,]+ unchanged"#])
        let photos = try #require(dry.stdout.range(of: #"Photo: 6,000 → [0-9,]+"#, options: .regularExpression), "\(dry.stdout)")
        let photosAfter = String(dry.stdout[photos].split(separator: " ").last!)
        let real = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", store, "--workers", "2"])
        #expect(real.status == 3)
        let done = try Self.numbers(real.stdout, [#"imported [0-9,]+"#, #"rejected [0-9,]+"#, #"[0-9,]+ inserted"#, #"[0-9,]+ updated"#, #"[0-9,]+ unchanged"#])
        #expect(said == done, "dry run \(said), real run \(done)\n\(dry.stdout)\n\(real.stdout)")
        #expect(said[0] == 12_000 && said[1] == 5)
        #expect(real.stdout.contains("Photo: \(photosAfter),"), "the dry run said \(photosAfter) photos: \(real.stdout)")
    }

    @Test func aDryRunIntoANewStoreLeavesNoStoreAndNoCopy() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 2_000, seed: 2).write(to: feed)
        let dry = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", dir.file("new.sqlite"), "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("would import 2,000 and reject 0") && dry.stdout.contains("2,000 inserted"), "\(dry.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["feed.json"])
    }

    @Test(arguments: [(["--dry-run"], "--dry-run needs --pipeline"),
                      (["--dry-run", "--pipeline", "p.json", "--delete-store"], "--dry-run writes nothing: it does not go with --delete-store"),
                      (["--dry-run", "--pipeline", "p.json", "--evolve"], "--dry-run writes nothing: it does not go with --evolve")])
    func aDryRunRefusesWhatWouldWrite(arguments: [String], message: String) throws {
        let outcome = try IngestBinary.run(["import", "feed.json", "--store", "s.sqlite"] + arguments)
        #expect(outcome.status == 2 && outcome.stderr.contains(message), "\(outcome.stderr)")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aDryRunOnPostgreSQLIsRefusedWithTheWayAround() throws {
        let server = try PostgresServer()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 10, seed: 2).write(to: feed)
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", try server.createDatabase("dry"), "--dry-run"])
        #expect(outcome.status != 0 && outcome.stderr.contains("--dry-run") && outcome.stderr.contains("TEMPLATE"), "\(outcome.stderr)")
    }
}
