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

    @Test func aStoppedDryRunRemovesItsCopyAndAStaleRejectsFileGoes() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = dir.file("feed.json"), store = dir.file("s.sqlite")
        try FeedGenerator(records: 150_000, seed: 2).write(to: feed)
        try dir.write("s.sqlite.dry-run.rejects.ndjson", Array("{\"run\":1}\n".utf8))
        let running = try IngestBinary.start(["import", feed, "--pipeline", Self.photos, "--store", store, "--dry-run", "--workers", "1"])
        // Stopped once its copy is there (the run has begun), long before the feed's end.
        for _ in 0..<400 where !(try FileManager.default.contentsOfDirectory(atPath: dir.path).contains { $0.hasPrefix(".ingest-dry-run.") }) {
            usleep(25_000)
        }
        usleep(300_000)
        kill(running.process.processIdentifier, SIGINT)
        let outcome = IngestBinary.finish(running)
        #expect(outcome.status == 1 && outcome.stderr.contains("stopped"), "\(outcome.status) \(outcome.stdout) \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["feed.json", "s.sqlite.dry-run.rejects.ndjson"])

        try FeedGenerator(records: 100, seed: 2).write(to: feed)
        let clean = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", store, "--dry-run"])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["feed.json"], "the last dry run rejected nothing: its old rejects file goes")
    }

    @Test(arguments: [(["--dry-run"], "--dry-run needs --pipeline"),
                      (["--dry-run", "--pipeline", "p.json", "--delete-store"], "--dry-run writes nothing: it does not go with --delete-store"),
                      (["--dry-run", "--pipeline", "p.json", "--evolve"], "--dry-run writes nothing: it does not go with --evolve")])
    func aDryRunRefusesWhatWouldWrite(arguments: [String], message: String) throws {
        let outcome = try IngestBinary.run(["import", "feed.json", "--store", "s.sqlite"] + arguments)
        #expect(outcome.status == 2 && outcome.stderr.contains(message), "\(outcome.stderr)")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aDryRunOnPostgreSQLChangesNothingAndPrintsWhatTheRealImportThenDoes() throws {
        let server = try PostgresServer()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let url = try server.createDatabase("dry")
        let first = dir.file("first.json"), second = dir.file("second.json")
        try FeedGenerator(records: 3_000, seed: 9).write(to: first)
        try FeedGenerator(records: 6_000, seed: 9, repeatKeys: 2).write(to: second)
        let text = try String(contentsOfFile: second, encoding: .utf8)
        try dir.write("second.json", Array(("[\n" + (0..<4).map { #"{"title":"no id \#($0)"},"# + "\n" }.joined() + text.dropFirst(2)).utf8))
        let imported = try IngestBinary.run(["import", first, "--pipeline", Self.photos, "--store", url, "--workers", "2", "--quiet"])
        #expect(imported.status == 0, "\(imported.stderr)")

        // Every row of the store, its runs and rejects, and the server's databases.
        let snapshot = """
            SELECT (SELECT md5(string_agg(p::text, '|' ORDER BY p::text)) FROM "Photo" p),
                   (SELECT md5(string_agg(g::text, '|' ORDER BY g::text)) FROM "Photographer" g),
                   (SELECT md5(string_agg(r::text, '|' ORDER BY r::text)) FROM _ingest_runs r),
                   (SELECT count(*) FROM _ingest_rejects), (SELECT count(*) FROM _ingest_chunks),
                   (SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database)
            """
        let before = try server.psql(["-d", "dry", "-At", "-c", snapshot])
        let dry = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", url, "--workers", "2", "--dry-run"], in: dir.path)
        #expect(dry.status == 3, "rejects make exit status 3: \(dry.stdout) \(dry.stderr)")
        #expect(try server.psql(["-d", "dry", "-At", "-c", snapshot]) == before, "the store or the server's databases changed")
        let rejects = try String(contentsOfFile: dir.file("dry.dry-run.rejects.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(rejects.count == 4 && rejects.allSatisfy { $0.contains("missing required value") }, "\(rejects)")

        let said = try Self.numbers(dry.stdout, [#"would import [0-9,]+"#, #"reject [0-9,]+"#, #"[0-9,]+ inserted"#, #"[0-9,]+ updated"#, #"[0-9,]+ unchanged"#])
        let real = try IngestBinary.run(["import", second, "--pipeline", Self.photos, "--store", url, "--workers", "2"])
        #expect(real.status == 3, "\(real.stderr)")
        let done = try Self.numbers(real.stdout, [#"imported [0-9,]+"#, #"rejected [0-9,]+"#, #"[0-9,]+ inserted"#, #"[0-9,]+ updated"#, #"[0-9,]+ unchanged"#])
        #expect(said == done, "dry run \(said), real run \(done)\n\(dry.stdout)\n\(real.stdout)")
        #expect(said[0] == 6_000 && said[1] == 4)
        let photos = try server.psql(["-d", "dry", "-At", "-c", #"SELECT count(*) FROM "Photo""#]).trimmingCharacters(in: .whitespacesAndNewlines)
        let formatted = Int(photos)!.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
        #expect(dry.stdout.contains("Photo: 3,000 → \(formatted)"), "the store holds \(photos) photos after the real import: \(dry.stdout)")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aDryRunOnADatabaseInUseSaysWhyItCannotCopyIt() throws {
        let server = try PostgresServer()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let url = try server.createDatabase("busy")
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 10, seed: 2).write(to: feed)
        // Another session holds the database while the dry run asks for its copy.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: PostgresServer.binaries! + "/psql")
        holder.arguments = ["-X", "-q", url, "-c", "SELECT pg_sleep(30)"]
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer {
            // Its session is ended from the server's side: psql does not always see the
            // SIGTERM, and the test then waited out the whole pg_sleep.
            _ = try? server.psql(["-c", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'busy'"])
            holder.terminate()
            holder.waitUntilExit()
        }
        for _ in 0..<200 {
            let sessions = try server.psql(["-At", "-c", "SELECT count(*) FROM pg_stat_activity WHERE datname = 'busy'"])
            if sessions.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { break }
            usleep(50_000)
        }
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", url, "--dry-run"], in: dir.path)
        #expect(outcome.status == 1 && outcome.stderr.contains("no other session is connected"), "\(outcome.stderr)")
    }
}
