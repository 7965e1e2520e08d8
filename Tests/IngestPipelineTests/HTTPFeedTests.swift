import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Feeds over HTTP: read as they arrive (gzip too), continued with a `Range` request after a
/// connection drops or the run stops, read whole again from a server that ignores `Range`,
/// and refused when the document changed under a resumed run.
@Suite struct HTTPFeedTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    /// A generated feed's bytes, gzip-compressed when asked.
    static func feed(_ dir: TemporaryDirectory, records: Int = 6_000, seed: UInt64 = 3, gzip: Bool = false) throws -> [UInt8] {
        let path = dir.file("feed-\(seed).json")
        try FeedGenerator(records: records, seed: seed).write(to: path)
        guard gzip else { return try FileOps.readFile(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-kf", path]
        try process.run()
        process.waitUntilExit()
        return try FileOps.readFile(path + ".gz")
    }

    /// The store's photos, by id, as the tests compare them.
    static func photos(_ store: String) throws -> [String] {
        try storeRows(store, "SELECT id, title, views, uploadDate, latitude FROM Photo ORDER BY id")
    }

    /// The same feed imported from a file: what every import over HTTP must equal.
    static func reference(_ dir: TemporaryDirectory, seed: UInt64 = 3, records: Int = 6_000) throws -> [String] {
        let store = dir.file("reference-\(seed).sqlite")
        let outcome = try IngestBinary.run(["import", dir.file("feed-\(seed).json"), "--pipeline", Self.photos, "--store", store, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return try Self.photos(store)
    }

    /// The test server a test lets go stops listening: its thread does not keep it (and
    /// itself) alive to the end of the test process.
    @Test func aTestServerLetGoStopsListening() throws {
        var port = 0
        do {
            let server = try TestHTTPServer(.init(bytes: Array("[]".utf8), etag: "\"v1\""))
            port = server.port
        }
        #expect(!Self.connects(to: port))
    }

    static func connects(to port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    @Test(arguments: [false, true])
    func aFeedOverHTTPImportsAsItsFileWould(gzip: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = try TestHTTPServer(.init(bytes: try Self.feed(dir, gzip: gzip), etag: "\"v1\""))
        let store = dir.file("s.sqlite"), url = server.url(gzip ? "/feed.json.gz" : "/feed.json")
        let outcome = try IngestBinary.run(["import", url, "--pipeline", Self.photos, "--store", store, "--chunk-size", "1000"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try Self.photos(store) == Self.reference(dir))
        #expect(try IngestBinary.run(["status", store]).stdout.contains("feed: \(url)"))
        #expect(!FileManager.default.fileExists(atPath: store + ".chunks"), "the spool goes with the chunks when the run finishes")
        let missing = try IngestBinary.run(["import", server.url("/missing"), "--pipeline", Self.photos, "--store", dir.file("m.sqlite")])
        #expect(missing.status == 1 && missing.stderr.contains("the server answered HTTP 404"), "\(missing.stderr)")
    }

    @Test(arguments: [false, true])
    func aConnectionDroppedMidBodyIsContinued(serverIgnoresRange: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let bytes = try Self.feed(dir)
        let server = try TestHTTPServer(.init(bytes: bytes, etag: "\"v1\""))
        server.change { _, faults in
            faults.ignoresRange = serverIgnoresRange
            faults.dropNextAfter = bytes.count * 2 / 5
        }
        let store = dir.file("s.sqlite")
        let outcome = try IngestBinary.run(["import", server.url(), "--pipeline", Self.photos, "--store", store])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try Self.photos(store) == Self.reference(dir))
        let feedRequests = server.log.filter { !$0.hasPrefix("/missing") }
        if serverIgnoresRange {
            #expect(feedRequests.contains { $0.contains("range=bytes=") && $0.hasSuffix("status=200") }, "\(feedRequests)")
        } else {
            #expect(feedRequests.contains { $0.contains("range=bytes=\(bytes.count * 2 / 5)-") && $0.hasSuffix("status=206") }, "\(feedRequests)")
        }
    }

    /// An import of a slow server's 12,000 records stopped by SIGINT once a third of the body
    /// arrived: the server, the body, the store and the spool.
    static func importStoppedMidway(_ dir: TemporaryDirectory) throws -> (TestHTTPServer, [UInt8], String, String) {
        let bytes = try Self.feed(dir, records: 12_000)
        let server = try TestHTTPServer(.init(bytes: bytes, etag: "\"v1\""))
        server.change { _, faults in faults.pause = .milliseconds(20) }
        let store = dir.file("s.sqlite"), spool = store + ".chunks/run-0001/feed.download"
        let running = try IngestBinary.start(["import", server.url(), "--pipeline", Self.photos, "--store", store, "--chunk-size", "500"])
        while running.process.isRunning && (FileOps.fileSize(spool) ?? 0) < bytes.count / 3 { usleep(5_000) }
        kill(running.process.processIdentifier, SIGINT)
        let stopped = IngestBinary.finish(running)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        return (server, bytes, store, spool)
    }

    /// The spool is the split's own file: a link put in its place is refused, and what it names kept.
    @Test func aResumeRefusesALinkInThePlaceOfItsSpool() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let (server, _, store, spool) = try Self.importStoppedMidway(dir)
        server.change { _, faults in faults.pause = .zero }
        let precious = try dir.write("precious.json", Array(String(repeating: "x", count: 5 << 20).utf8))
        try FileManager.default.removeItem(atPath: spool)
        try FileManager.default.createSymbolicLink(atPath: spool, withDestinationPath: precious)
        let resumed = try IngestBinary.run(["resume", store])
        #expect(resumed.status == 1 && resumed.stderr.contains("feed.download"), "\(resumed.stderr)")
        #expect(FileOps.fileSize(precious) == 5 << 20)
    }

    /// Stopped while the feed arrives, the import keeps what arrived; its resume asks only for the rest.
    @Test func aStoppedImportResumesWithARangeRequestFromWhatItKept() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let (server, bytes, store, spool) = try Self.importStoppedMidway(dir)
        let kept = try #require(FileOps.fileSize(spool))
        #expect(kept > 0 && kept < bytes.count)

        server.change { _, faults in faults.pause = .zero }
        let resumed = try IngestBinary.run(["resume", store])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(server.log.last == "/feed.json range=bytes=\(kept)- status=206", "\(server.log)")
        #expect(try Self.photos(store) == Self.reference(dir, records: 12_000))
    }

    @Test func aResumeRefusesADocumentThatChangedMeanwhile() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let (server, _, store, _) = try Self.importStoppedMidway(dir)

        let other = try Self.feed(dir, records: 12_000, seed: 4)
        server.change { document, faults in
            document = .init(bytes: other, etag: "\"v2\"")
            faults.pause = .zero
        }
        let resumed = try IngestBinary.run(["resume", store])
        #expect(resumed.status == 1 && resumed.stderr.contains("changed since this run began reading it (ETag \"v1\""), "\(resumed.stderr)")
    }

    /// An import of a 12,000-record feed over a slow HTTP server into database `name`, stopped
    /// (SIGINT) once a third of the feed is in its spool.
    static func stoppedPostgreSQLImport(_ postgres: PostgresServer, _ dir: TemporaryDirectory, database name: String) throws
        -> (server: TestHTTPServer, url: String, spoolDirectory: String, spool: String, bytes: [UInt8]) {
        let bytes = try Self.feed(dir, records: 12_000)
        let server = try TestHTTPServer(.init(bytes: bytes, etag: "\"v1\""))
        server.change { _, faults in faults.pause = .milliseconds(20) }
        let url = try postgres.createDatabase(name)
        let spoolDirectory = HTTPSpoolDirectory.path(url: try PostgresURL(url), run: 1, feed: server.url())
        let spool = spoolDirectory + "/" + HTTPByteSource.spoolName
        let running = try IngestBinary.start(["import", server.url(), "--pipeline", Self.photos, "--store", url, "--chunk-size", "500"])
        while running.process.isRunning && (FileOps.fileSize(spool) ?? 0) < bytes.count / 3 { usleep(5_000) }
        kill(running.process.processIdentifier, SIGINT)
        let stopped = IngestBinary.finish(running)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        return (server, url, spoolDirectory, spool, bytes)
    }

    /// On PostgreSQL too: the split's chunk directory goes with its process, but the download
    /// is kept apart (`HTTPSpoolDirectory`), so the resume asks only for the rest, and the
    /// download goes once the split has read the feed to its end.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aStoppedPostgreSQLImportResumesWithARangeRequestFromWhatItKept() throws {
        let postgres = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let (server, url, spoolDirectory, spool, bytes) = try Self.stoppedPostgreSQLImport(postgres, dir, database: "http_resume")
        let kept = try #require(FileOps.fileSize(spool))
        #expect(kept > 0 && kept < bytes.count)
        let before = server.log.count

        server.change { _, faults in faults.pause = .zero }
        let resumed = try IngestBinary.run(["resume", url])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let after = Array(server.log.dropFirst(before))
        #expect(after.contains("/feed.json range=bytes=\(kept)- status=206"), "\(after)")
        #expect(!after.contains { $0.contains("range=- ") }, "nothing is downloaded whole again: \(after)")
        let rows = try postgres.psql(["-d", "http_resume", "-At", "-c", #"SELECT count(*), sum(views) FROM "Photo""#])
        #expect(rows.hasPrefix("\(try Self.reference(dir, records: 12_000).count)|"), "\(rows)")
        #expect(!FileManager.default.fileExists(atPath: spoolDirectory), "the download goes once the feed was read to its end")
    }

    /// A stopped run's download kept on this machine goes when the run ends without a split
    /// here reading it: abandoned for another feed (`--abandon-run`), it stayed in the
    /// temporary directory for good.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func anAbandonedPostgreSQLRunTakesTheDownloadItKeptWithIt() throws {
        let postgres = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let (server, url, spoolDirectory, spool, _) = try Self.stoppedPostgreSQLImport(postgres, dir, database: "http_abandon")
        defer { withExtendedLifetime(server) {} }
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        try #require((FileOps.fileSize(spool) ?? 0) > 0, "kept for a resume")

        let other = try dir.write("other.json", Array(#"[{"id":"o1","title":"other","views":1}]"#.utf8))
        let abandoned = try IngestBinary.run(["import", other, "--pipeline", Self.photos, "--store", url, "--abandon-run"])
        #expect(abandoned.status == 0, "\(abandoned.stderr)")
        #expect(!FileManager.default.fileExists(atPath: spoolDirectory), "run 1's download goes with it")
        let rows = try postgres.psql(["-d", "http_abandon", "-At", "-c", "SELECT run, state FROM _ingest_runs ORDER BY run"])
        #expect(rows.trimmingCharacters(in: .whitespacesAndNewlines) == "1|abandoned\n2|finished", "\(rows)")
    }

    /// The spool directory's name is predictable (the temporary directory is shared): a link
    /// put there is not followed, nor removed, and what it names gets nothing; the split keeps
    /// the download with its chunks instead, and says so.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aLinkInThePlaceOfThePostgreSQLSpoolDirectoryIsNotFollowed() throws {
        let postgres = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = try TestHTTPServer(.init(bytes: try Self.feed(dir), etag: "\"v1\""))
        let url = try postgres.createDatabase("http_link")
        let spoolDirectory = HTTPSpoolDirectory.path(url: try PostgresURL(url), run: 1, feed: server.url())
        let elsewhere = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: spoolDirectory, withDestinationPath: elsewhere)
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let outcome = try IngestBinary.run(["import", server.url(), "--pipeline", Self.photos, "--store", url])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("the feed's download is kept with the chunks instead"), "\(outcome.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: spoolDirectory) == elsewhere)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        let rows = try postgres.psql(["-d", "http_link", "-At", "-c", #"SELECT count(*) FROM "Photo""#])
        #expect(rows.hasPrefix("\(try Self.reference(dir).count)"), "\(rows)")
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func aFeedOverHTTPImportsIntoPostgreSQL() throws {
        let postgres = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let server = try TestHTTPServer(.init(bytes: try Self.feed(dir, gzip: true), etag: "\"v1\""))
        let url = try postgres.createDatabase("http")
        let outcome = try IngestBinary.run(["import", server.url("/feed.json.gz"), "--pipeline", Self.photos, "--store", url, "--workers", "2"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try postgres.psql(["-d", "http", "-At", "-c", #"SELECT count(*), sum(views) FROM "Photo""#])
        let reference = try Self.reference(dir)
        #expect(rows.hasPrefix("\(reference.count)|"), "\(rows)")
    }
}
