import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// The chunks an importing process keeps (`PostgresImport.split(keeping:)`): stored in the
/// database only for processes that join, and taken over from the feed when their process
/// is gone.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresKeptChunksTests {
    /// A server, a directory and a generated feed of `records` records in it.
    static func feed(seed: UInt64, records: Int = 20_000) throws -> (PostgresServer, TemporaryDirectory, feed: String, PostgresURL) {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: records, seed: seed).write(to: feed)
        return (server, dir, feed, try PostgresURL(server.url))
    }

    /// `ingest import` of `feed` into the server, started (small saves keep it busy long after).
    static func startImport(_ feed: String, _ server: PostgresServer, workers: Int, chunkSize: Int, saveEvery: Int,
                            leaseSeconds: Double? = nil) throws -> IngestBinary.Running {
        try IngestBinary.start(["import", feed, "--pipeline", PostgresImportTests.photos, "--store", server.url,
                                "--workers", String(workers), "--chunk-size", String(chunkSize), "--save-every", String(saveEvery)]
                               + (leaseSeconds.map { ["--lease-seconds", String($0)] } ?? []) + ["--quiet"])
    }

    /// The run finished, every record committed exactly once, and the store equal to a
    /// clean SQLite import of the feed, every column.
    func expectFinishedAsACleanImport(_ server: PostgresServer, feed: String, records: Int, in dir: TemporaryDirectory) throws {
        let status = try PostgresStatus.read(url: try PostgresURL(server.url))
        #expect(status.runs.last?.state == "finished" && status.runs.last?.chunksKept == 0)
        #expect(status.processes.reduce(0) { $0 + $1.records } == records, "every record committed exactly once")
        // (Found reading session 14's change: the shared check had lost this comparison.)
        let spec = try PipelineSpec.load(path: PostgresImportTests.photos)
        _ = try Importer(spec: spec, options: .init(feed: feed, store: dir.file("clean.sqlite"))).run()
        #expect(try PostgresImportTests.postgresRows(server.url, spec.model)
                == PostgresImportTests.sqliteRows(dir.file("clean.sqlite"), spec.model))
    }
    /// A lone import stores no chunk bytes; killed, its chunks are not in the database, so a
    /// join that can read neither the feed nor the killed process's chunk files says where to
    /// continue, and one that can read the feed takes the split over and ends as a clean
    /// SQLite import. (40 chunks: of 500 records with `INGEST_STRESS`, of 200 without.)
    @Test(.timeLimit(.minutes(10)))
    func aLoneImportStoresNoChunkAndAJoinTakesItsChunksOverFromTheFeed() throws {
        let chunkSize = Stress.count(500, quick: 200)
        let (server, dir, feed, url) = try Self.feed(seed: 5, records: 40 * chunkSize)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: chunkSize, saveEvery: 20, leaseSeconds: 1.5)
        let connection = try PostgresConnection(url)
        func count(_ condition: String) throws -> Int {
            guard try connection.execute("SELECT to_regclass('_ingest_chunks') IS NOT NULL")[0, 0] == "t" else { return 0 }
            return Int(try connection.execute("SELECT count(*) FROM _ingest_chunks WHERE \(condition)")[0, 0]!)!
        }
        let deadline = Date().addingTimeInterval(60)
        while importing.process.isRunning, Date() < deadline, try count("finished IS NOT NULL") < 2 || count("true") < 40 {
            usleep(10_000)
        }
        kill(importing.process.processIdentifier, SIGKILL)
        _ = IngestBinary.finish(importing)
        #expect(try count("true") == 40, "the split registered every chunk")
        let unfinished = try count("finished IS NULL")
        #expect(unfinished > 0, "killed before the end")
        #expect(try count("octet_length(bytes) > 0") == 0, "no chunk stored: no other process wanted one")
        let shown = try IngestBinary.run(["status", server.url])
        let kept = try #require(try PostgresStatus.read(url: url).runs.last?.keptIn)
        #expect(shown.stdout.contains("in \(kept) (not stored in the database): \(unfinished) chunk(s)"), "\(shown.stdout)")

        // Once its lease is over, the killed process is gone, and status says what takes its chunks over.
        Thread.sleep(forTimeInterval: 1.6)
        let gone = try IngestBinary.run(["status", server.url])
        #expect(gone.stdout.contains("(not stored in the database): \(unfinished) chunk(s); that process is gone: ingest join where \(kept) can be read imports them, or ingest join or ingest import where \(feed) can be read stores them\n"),
                "\(gone.stdout)")
        // Elsewhere: the feed cannot be read, nor the chunk files (--from-database: as if they were not there).
        let moved = dir.file("moved.json")
        try FileManager.default.moveItem(atPath: feed, toPath: moved)
        let refused = try IngestBinary.run(["join", server.url, "--from-database", "--quiet"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("run 1's remaining chunks were kept by the process that split \(feed), which is gone, and are not stored in the database (this process cannot read that feed: it is not there, not a regular file, or not its size then); continue with: ingest import \(feed) --store \(ShellWord.quoted(url.description)) where that feed can be read, or ingest join \(ShellWord.quoted(url.description)) where its chunk files in \(kept) can be read"),
                "\(refused.stderr)")
        #expect(try count("finished IS NULL") == unfinished, "nothing imported without the chunks")

        try FileManager.default.moveItem(atPath: moved, toPath: feed)
        let joined = try IngestBinary.run(["join", server.url, "--from-database", "--quiet"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(try count("finished IS NULL") == 0)
        try expectFinishedAsACleanImport(server, feed: feed, records: 40 * chunkSize, in: dir)
    }

    /// The same `ingest import` run again after the importing process was killed splits the
    /// feed again and imports the chunks the killed one kept, claiming each only once its
    /// own split has written it.
    @Test(.timeLimit(.minutes(10)), .enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func importingAgainAfterAKillContinuesWithTheChunksTheKilledProcessKept() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 7)
        let importing = try Self.startImport(feed, server, workers: 2, chunkSize: 500, saveEvery: 20, leaseSeconds: 1.5)
        let deadline = Date().addingTimeInterval(60)
        // Far into the feed: the split made again has many chunks to write before the first
        // unfinished one, which the new workers must not claim before it is written.
        while importing.process.isRunning, Date() < deadline, ((try? PostgresStatus.read(url: url))?.runs.last?.recordsDone ?? 0) < 12_000 {
            usleep(5_000)
        }
        kill(importing.process.processIdentifier, SIGKILL)
        _ = IngestBinary.finish(importing)
        let kept = try #require(try PostgresStatus.read(url: url).runs.last).chunksKept
        #expect(kept > 0, "the killed process kept chunks")
        Thread.sleep(forTimeInterval: 1.6)
        // As the join's message says it: without the chunk size the run was split with.
        let again = try IngestBinary.run(["import", feed, "--store", server.url, "--workers", "2", "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try PostgresStatus.read(url: url).runs.count == 1)
        try expectFinishedAsACleanImport(server, feed: feed, records: 20_000, in: dir)
    }

    /// An importing process stopped at a signal while another process imports stores the
    /// chunks it kept first, so that process finishes the run without the feed.
    @Test(.timeLimit(.minutes(10)), .enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func anImportStoppedWhileAnotherProcessImportsStoresWhatItKept() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 8)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: 250, saveEvery: 10)
        let deadline = Date().addingTimeInterval(60)
        func status() -> PostgresStatus? { try? PostgresStatus.read(url: url) }
        while importing.process.isRunning, Date() < deadline, (status()?.runs.last?.recordsDone ?? 0) < 250 { usleep(10_000) }
        let joined = try IngestBinary.start(["join", server.url, "--workers", "1", "--quiet"])
        // Both importing, and the feed split whole (the rest of a split stopped early would need the feed).
        while importing.process.isRunning, Date() < deadline,
              (status()?.processes.filter(\.alive).count ?? 0) < 2 || (status()?.runs.last?.chunkCount ?? 0) < 80 { usleep(10_000) }
        // Elsewhere from here on: nobody could split the feed again.
        try FileManager.default.moveItem(atPath: feed, toPath: dir.file("moved.json"))
        kill(importing.process.processIdentifier, SIGINT)
        let stopped = IngestBinary.finish(importing)
        #expect(stopped.status == 128 + SIGINT, "\(stopped.stderr)")
        let finished = IngestBinary.finish(joined)
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try PostgresStatus.read(url: url).processes.map(\.state).sorted() == ["finished", "stopped"])
        try FileManager.default.moveItem(atPath: dir.file("moved.json"), toPath: feed)
        try expectFinishedAsACleanImport(server, feed: feed, records: 20_000, in: dir)
    }

    /// A process that joins a running import on this machine reads the chunks the importing
    /// process keeps from its chunk files: none is stored in the database, both import, and
    /// the store ends as a clean import.
    @Test(.timeLimit(.minutes(10)), .enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func aJoinThatCanReadTheKeptChunkFilesNeedsNoneStored() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 12)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: 250, saveEvery: 10)
        let deadline = Date().addingTimeInterval(60)
        while importing.process.isRunning, Date() < deadline, ((try? PostgresStatus.read(url: url))?.runs.last?.recordsDone ?? 0) < 250 {
            usleep(10_000)
        }
        let joined = try IngestBinary.start(["join", server.url, "--workers", "1", "--quiet"])
        let connection = try PostgresConnection(url)
        var mostStored = 0
        while joined.process.isRunning {
            mostStored = max(mostStored, Int(try connection.execute("SELECT count(*) FROM _ingest_chunks WHERE octet_length(bytes) > 0")[0, 0]!)!)
            usleep(5_000)
        }
        #expect(IngestBinary.finish(joined).status == 0)
        #expect(IngestBinary.finish(importing).status == 0)
        #expect(mostStored == 0, "no chunk stored for a process that reads the files")
        try Self.expectBothProcessesImported(url)
        try expectFinishedAsACleanImport(server, feed: feed, records: 20_000, in: dir)
    }

    /// The run's two processes each imported chunks.
    static func expectBothProcessesImported(_ url: PostgresURL) throws {
        let status = try PostgresStatus.read(url: url)
        #expect(status.processes.count == 2 && status.processes.allSatisfy { $0.records > 0 },
                "both processes imported chunks: \(status.processes.map(\.records))")
    }

    /// A joined process whose view of the importing process's chunk directory holds other
    /// files (a directory of that name on another machine) finds the first chunk that does
    /// not match its checksum, asks for stored chunks instead, and the run ends as a clean
    /// import.
    @Test(.timeLimit(.minutes(10)), .enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func aJoinWhoseChunkFilesDoNotMatchAsksForThemStored() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 13)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: 250, saveEvery: 10)
        let deadline = Date().addingTimeInterval(60)
        while importing.process.isRunning, Date() < deadline, ((try? PostgresStatus.read(url: url))?.runs.last?.chunkCount ?? 0) < 80 {
            usleep(10_000)
        }
        // Another machine's directory of the same name: files named as the chunks, other bytes.
        let decoy = dir.file("decoy")
        try FileManager.default.createDirectory(atPath: decoy, withIntermediateDirectories: true)
        for number in 1...80 { _ = try dir.write("decoy/" + ChunkInfo.fileName(for: number), Array("{\"id\":\"decoy\"}\n".utf8)) }
        let connection = try PostgresConnection(url)
        try connection.execute("UPDATE _ingest_runs SET record = jsonb_set(record::jsonb, '{splitDirectory}', to_jsonb($1::text))::text",
                               [decoy])
        let joined = try IngestBinary.run(["join", server.url, "--workers", "1", "--quiet"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(IngestBinary.finish(importing).status == 0)
        #expect(try connection.execute("SELECT count(*) FROM _ingest_processes WHERE reads_kept")[0, 0] == "0",
                "the joined process stopped reading the files")
        try Self.expectBothProcessesImported(url)
        try expectFinishedAsACleanImport(server, feed: feed, records: 20_000, in: dir)
    }

    /// The importing process killed, a join on the same machine finishes the run from the
    /// chunk files it left, without the feed.
    @Test(.timeLimit(.minutes(10)), .enabled(if: Stress.isOn, Comment(rawValue: Stress.reason)))
    func aKilledImportsChunkFilesFinishTheRunWithoutTheFeed() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 14)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: 500, saveEvery: 20, leaseSeconds: 1.5)
        let deadline = Date().addingTimeInterval(60)
        func status() -> PostgresStatus? { try? PostgresStatus.read(url: url) }
        while importing.process.isRunning, Date() < deadline, (status()?.runs.last?.chunkCount ?? 0) < 40 || (status()?.runs.last?.recordsDone ?? 0) < 1_000 {
            usleep(10_000)
        }
        kill(importing.process.processIdentifier, SIGKILL)
        _ = IngestBinary.finish(importing)
        #expect((status()?.runs.last?.chunksKept ?? 0) > 0, "killed with chunks kept")
        let kept = try #require(status()?.runs.last?.keptIn)
        // At once, while the killed process's leases last (found by review: the join then
        // looked for the feed instead of waiting to claim those chunks from the files).
        let moved = dir.file("moved.json")
        try FileManager.default.moveItem(atPath: feed, toPath: moved)
        let joined = try IngestBinary.run(["join", server.url, "--quiet"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(!FileManager.default.fileExists(atPath: kept), "the gone process's chunk files removed once the run finished")
        try FileManager.default.moveItem(atPath: moved, toPath: feed)
        try expectFinishedAsACleanImport(server, feed: feed, records: 20_000, in: dir)
    }

    /// A store made before `_ingest_processes.reads_kept` existed gets the column as it is
    /// opened, and imports into it go on (found by review: it was added to new stores only).
    @Test(.timeLimit(.minutes(10)))
    func aStoreMadeBeforeTheReadsKeptColumnGetsItWhenOpened() throws {
        let (server, dir, feed, url) = try Self.feed(seed: 15)
        defer { withExtendedLifetime(dir) {} }
        let first = try IngestBinary.run(["import", feed, "--pipeline", PostgresImportTests.photos, "--store", server.url, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let connection = try PostgresConnection(url)
        try connection.execute("ALTER TABLE _ingest_processes DROP COLUMN reads_kept")
        let again = try IngestBinary.run(["import", feed, "--pipeline", PostgresImportTests.photos, "--store", server.url, "--again", "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try connection.execute("""
            SELECT count(*) FROM pg_attribute WHERE attrelid = '_ingest_processes'::regclass AND attname = 'reads_kept'
            """)[0, 0] == "1")
        #expect(try PostgresStatus.read(url: url).runs.map(\.state) == ["finished", "finished"])
    }

    /// A process that joins a running import gets the chunks the importing process keeps,
    /// stored for it while it waits (it reads none from the files: `--from-database`, as
    /// another machine would), and both end the run together. (A feed of 20,000 records with
    /// `INGEST_STRESS`, 8,000 without.)
    @Test(.timeLimit(.minutes(10)))
    func aJoinedProcessIsGivenChunksTheImportingProcessKeeps() throws {
        let records = Stress.count(20_000, quick: 8_000)
        // Small saves keep the importing process busy long after the join starts.
        let (server, dir, feed, url) = try Self.feed(seed: 6, records: records)
        let importing = try Self.startImport(feed, server, workers: 1, chunkSize: 250, saveEvery: 10)
        let deadline = Date().addingTimeInterval(60)
        while importing.process.isRunning, Date() < deadline, ((try? PostgresStatus.read(url: url))?.runs.last?.recordsDone ?? 0) < 250 {
            usleep(10_000)
        }
        let joined = try IngestBinary.run(["join", server.url, "--workers", "1", "--from-database", "--quiet"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(IngestBinary.finish(importing).status == 0)
        let status = try PostgresStatus.read(url: url)
        #expect(status.processes.count == 2)
        #expect(status.processes.allSatisfy { $0.records > 0 }, "both processes imported chunks: \(status.processes.map(\.records))")
        try expectFinishedAsACleanImport(server, feed: feed, records: records, in: dir)
    }
}
