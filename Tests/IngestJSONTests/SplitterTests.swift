import IngestTestSupport
import Foundation
import Testing
@testable import IngestJSON

@Suite struct SplitterTests {
    /// Every file a split leaves in `directory`, by name.
    func files(_ directory: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileOps.contents(of: directory) { out[name] = try FileOps.readFile(directory + "/" + name) }
        return out
    }

    func split(_ feed: String, into directory: String, chunkSize: Int = 3, shape: FeedShape = .array,
               force: Bool = false) throws -> SplitReport {
        try Splitter(feedPath: feed, directory: directory,
                     options: SplitOptions(feed: FeedOptions(shape: shape), chunkSize: chunkSize, force: force)).run()
    }

    @Test func chunksHoldTheRecordsInOrderOnePerLine() throws {
        let temp = try TemporaryDirectory()
        let feed = Fixtures.path("photos-10.json")
        let report = try split(feed, into: temp.path)
        let records = try readRecords(Fixtures.bytes("photos-10.json")).map(\.text)
        #expect(report.manifest.chunks.map(\.records) == [3, 3, 3, 1])
        #expect(report.manifest.chunks.map(\.file) == ["chunk-000001.ndjson", "chunk-000002.ndjson",
                                                       "chunk-000003.ndjson", "chunk-000004.ndjson"])
        #expect(report.manifest.chunks.map(\.firstRecord) == [0, 3, 6, 9])
        var lines: [String] = []
        for chunk in report.manifest.chunks {
            let bytes = try FileOps.readFile(temp.file(chunk.file))
            #expect(bytes.count == chunk.byteSize)
            #expect(bytes.last == UInt8(ascii: "\n"))
            lines += String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        #expect(lines == records)
        #expect(report.manifest.totalRecords == 10)
        #expect(report.manifest.feed.byteSize == FileOps.fileSize(feed))
        #expect(report.manifest.feed.checksum == (try Splitter.fullHash(feed)))
        #expect(report.manifest.formatVersion == 2)
        #expect(Set(try FileOps.contents(of: temp.path)) == Set(report.manifest.chunks.map(\.file) + ["manifest.json"]))
    }

    @Test func manifestOnDiskMatchesTheReportAndTheChunkChecksums() throws {
        let temp = try TemporaryDirectory()
        let report = try split(Fixtures.path("photos-10.json"), into: temp.path)
        let manifest = try JSONDecoder().decode(SplitManifest.self, from: Data(FileOps.readFile(temp.file("manifest.json"))))
        #expect(manifest == report.manifest)
        for chunk in manifest.chunks {
            #expect(try Splitter.fullHash(temp.file(chunk.file)) == chunk.checksum)
        }
    }

    /// Found by probing: a manifest edited to list fewer chunks imported fewer records with
    /// exit 0. One that does not add up is refused as damaged, and the split is made again.
    @Test(arguments: ["drop the last", "drop the first", "lower the total", "renumber"])
    func aManifestThatDoesNotAddUpIsRefusedAsDamaged(edit: String) throws {
        let temp = try TemporaryDirectory()
        let feed = Fixtures.path("photos-10.json")
        let report = try split(feed, into: temp.path)
        var edited = report.manifest
        switch edit {
        case "drop the last": edited.chunks.removeLast()
        case "drop the first": edited.chunks.removeFirst()
        case "lower the total": edited.totalRecords -= 1
        default: edited.chunks[1].index = 7
        }
        try Data(JSONEncoder().encode(edited)).write(to: URL(fileURLWithPath: temp.file("manifest.json")))
        #expect(throws: SplitError.unreadableState(path: temp.file("manifest.json"))) { try SplitManifest.load(fromDirectory: temp.path) }
        #expect(throws: SplitError.unreadableState(path: temp.file("manifest.json"))) { try split(feed, into: temp.path) }
        let again = try split(feed, into: temp.path, force: true)
        #expect(again.manifest == report.manifest)
        #expect(try SplitManifest.load(fromDirectory: temp.path) == report.manifest)
    }

    @Test func emptyArrayGivesNoChunksAndAValidManifest() throws {
        let temp = try TemporaryDirectory()
        let report = try split(Fixtures.path("empty-array.json"), into: temp.path)
        #expect(report.manifest.chunks.isEmpty)
        #expect(report.manifest.totalRecords == 0)
        #expect(try FileOps.contents(of: temp.path) == ["manifest.json"])
        let manifest = try JSONDecoder().decode(SplitManifest.self, from: Data(FileOps.readFile(temp.file("manifest.json"))))
        #expect(manifest.chunks.isEmpty && manifest.feed.byteSize == 3)
    }

    @Test func multiLineRecordsAreWrittenCompactly() throws {
        let temp = try TemporaryDirectory()
        _ = try split(Fixtures.path("pretty.json"), into: temp.path, chunkSize: 100)
        let text = String(decoding: try FileOps.readFile(temp.file("chunk-000001.ndjson")), as: UTF8.self)
        #expect(text == """
            {"id":"p1","title":"Spaces   inside strings stay","tags":["a","b"],"nested":{"deep":[1,2.50,-0.0]}}
            {"id": "p2", "title": "already compact"}
            "a bare string record"
            12345678901234567890123
            null
            [ true, false ]

            """)
    }

    @Test func keyPathAndNDJSONShapesSplit() throws {
        let temp = try TemporaryDirectory()
        let geo = try split(Fixtures.path("geojson.json"), into: temp.file("geo"), chunkSize: 2, shape: .keyPath(["features"]))
        #expect(geo.manifest.chunks.map(\.records) == [2, 1])
        #expect(geo.manifest.shape == ShapeRecord(.keyPath(["features"])))
        #expect(geo.manifest.shape.recordsAt == "features")
        let nd = try split(Fixtures.path("records.ndjson"), into: temp.file("nd"), chunkSize: 2, shape: .ndjson)
        #expect(nd.manifest.chunks.map(\.records) == [2, 2, 1])
        #expect(String(decoding: try FileOps.readFile(temp.file("nd/chunk-000003.ndjson")), as: UTF8.self) == "\"a string record\"\n")
    }

    /// A FIFO or process substitution is read to its end once, as standard input is:
    /// nothing opens it a second time (which took bytes from the split's own read).
    @Test(arguments: [false, true])
    func aFIFOIsReadToItsEndOnce(ndjson: Bool) throws {
        let temp = try TemporaryDirectory()
        let bytes = FeedGenerator(records: 5_000, seed: 3, ndjson: ndjson).bytes()
        #expect(bytes.count > 1 << 20, "past the 1 MiB head the split hashes for regular files")
        let fifo = temp.file("feed.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(FileOps.isReadOnce(fifo) && FileOps.isReadOnce("-") && !FileOps.isReadOnce(Fixtures.path("photos-10.json")))
        let writer = Thread {
            // Small writes, so the reader sees many short reads.
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, min(4093, bytes.count - offset)) }
                if n <= 0 { break }
                offset += n
            }
            close(fd)
        }
        writer.start()
        let report = try split(fifo, into: temp.file("chunks"), chunkSize: 1_000, shape: ndjson ? .ndjson : .array)
        #expect(report.manifest.totalRecords == 5_000)
        #expect(report.manifest.feed.byteSize == bytes.count)
        #expect(report.manifest.feed.checksum == bytes.withUnsafeBytes { Checksum.hex(of: $0) })
    }

    @Test func splittingAgainFindsTheSplitCompleteAndWritesNothing() throws {
        let temp = try TemporaryDirectory()
        let feed = Fixtures.path("photos-10.json")
        let first = try split(feed, into: temp.path)
        let before = try files(temp.path)
        let again = try split(feed, into: temp.path)
        #expect(again.alreadyComplete)
        #expect(again.chunksWritten == 0)
        #expect(again.manifest == first.manifest)
        #expect(try files(temp.path) == before)
    }

    /// A split killed while it wrote its journal or manifest leaves their temporary file
    /// (`.NAME.PID-N.tmp`); the next split removes those of a process that is gone, and
    /// leaves a live process's and every other file (found: a killed split's directory,
    /// resumed, had one file more than an uninterrupted split's).
    @Test func aKilledSplitsTemporaryJournalAndManifestAreRemovedOthersKept() throws {
        let temp = try TemporaryDirectory()
        let feed = Fixtures.path("photos-10.json")
        let reference = temp.file("reference")
        _ = try split(feed, into: reference)
        let expected = try files(reference)
        // A process that has exited, and so is gone by the time the split looks.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = gone.processIdentifier
        let directory = temp.file("resumed")
        let splitter = Splitter(feedPath: feed, directory: directory, options: SplitOptions(chunkSize: 3))
        splitter.stopAfterChunks = 1
        #expect(throws: SplitError.interrupted(directory: directory, chunks: 1)) { try splitter.run() }
        let leftovers = [".\(SplitJournal.fileName).\(dead)-1.tmp", ".\(SplitManifest.fileName).\(dead)-7.tmp"]
        let kept = [".\(SplitManifest.fileName).\(getpid())-9.tmp", ".\(SplitManifest.fileName).tmp", "notes.\(dead)-1.tmp",
                    ".\(SplitJournal.fileName).x-1.tmp"]
        for name in leftovers + kept { _ = try temp.write("resumed/" + name, [1, 2, 3]) }
        _ = try split(feed, into: directory)
        var withKept = expected
        for name in kept { withKept[name] = [1, 2, 3] }
        #expect(try files(directory) == withKept)
    }

    /// Stop after every possible chunk, damage the tail as a crash or a careless user
    /// might, run again: the directory ends byte-identical to an uninterrupted split.
    @Test(arguments: 1...3)
    func interruptedSplitResumesToIdenticalChunks(stopAfter: Int) throws {
        let temp = try TemporaryDirectory()
        let feed = Fixtures.path("photos-10.json")
        let reference = temp.file("reference")
        _ = try split(feed, into: reference)
        let expected = try files(reference)

        for damage in ["none", "truncate last", "delete last", "stray temp file"] {
            let directory = temp.file("resumed-\(damage)")
            let splitter = Splitter(feedPath: feed, directory: directory, options: SplitOptions(chunkSize: 3))
            splitter.stopAfterChunks = stopAfter
            #expect(throws: SplitError.interrupted(directory: directory, chunks: stopAfter)) { try splitter.run() }
            #expect(FileOps.fileSize(directory + "/manifest.json") == nil)
            let journal = try SplitJournal.load(from: directory + "/" + SplitJournal.fileName)
            let done = journal.chunks.count
            #expect(done == stopAfter)
            let last = directory + "/" + ChunkInfo.fileName(for: done)
            switch damage {
            case "truncate last": truncate(last, off_t(journal.chunks[done - 1].byteSize / 2))
            case "delete last": try FileOps.remove(last)
            case "stray temp file": _ = try temp.write("resumed-\(damage)/.chunk-000004.ndjson.tmp", [1, 2, 3])
            default: break
            }
            let report = try split(feed, into: directory)
            #expect(try files(directory) == expected, "damage: \(damage)")
            #expect(report.chunksReused == (damage == "none" || damage == "stray temp file" ? done : done - 1), "damage: \(damage)")
            #expect(report.chunksWritten + report.chunksReused == 4)
        }
    }

    @Test func aDirectoryOfAnotherFeedIsRefusedUnlessForced() throws {
        let temp = try TemporaryDirectory()
        _ = try split(Fixtures.path("photos-10.json"), into: temp.path)
        var changed = try Fixtures.bytes("photos-10.json")
        changed[changed.firstIndex(of: UInt8(ascii: "#"))!] = UInt8(ascii: "%")
        let other = try temp.write("other.json", changed)
        let error = try #require(throws: SplitError.self) { try split(other, into: temp.path) }
        guard case .differentFeed(_, let reason) = error else { Issue.record("\(error)"); return }
        #expect(reason == "the feed's first bytes differ from those of the feed it was split from")
        #expect(!error.description.contains("--"), "the library speaks no command-line flags")

        let otherSize = try #require(throws: SplitError.self) { try split(Fixtures.path("geojson.json"), into: temp.path) }
        #expect(otherSize.description.contains("had 4013 bytes, this one has 535"))
        let otherChunks = try #require(throws: SplitError.self) { try split(Fixtures.path("photos-10.json"), into: temp.path, chunkSize: 4) }
        #expect(otherChunks.description.contains("it was split in chunks of 3 records, not 4"))

        let forced = try split(other, into: temp.path, force: true)
        #expect(forced.chunksWritten == 4 && forced.chunksReused == 0)
        #expect(forced.manifest.feed.checksum == (try Splitter.fullHash(other)))
    }

    /// Chunk directories of format 1 were checked with SHA-256: an earlier version's split is
    /// refused by name (then `--force`), never read with the wrong checksums.
    @Test func aSplitByAnEarlierVersionIsRefusedSayingSo() throws {
        let temp = try TemporaryDirectory()
        _ = try split(Fixtures.path("photos-10.json"), into: temp.path)
        let manifest = temp.file("manifest.json")
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try Data(text.replacingOccurrences(of: "\"formatVersion\" : 2", with: "\"formatVersion\" : 1").utf8)
            .write(to: URL(fileURLWithPath: manifest))
        let error = try #require(throws: SplitError.self) { try split(Fixtures.path("photos-10.json"), into: temp.path) }
        #expect(error == .differentFeed(directory: temp.path, reason: "it was split by an earlier version of Ingest (format 1, SHA-256 checksums)"))
        #expect(try split(Fixtures.path("photos-10.json"), into: temp.path, force: true).chunksWritten == 4)
    }

    @Test func chunkFilesNoSplitDescribesAreRefused() throws {
        let temp = try TemporaryDirectory()
        _ = try temp.write("chunk-000001.ndjson", Array("{}\n".utf8))
        let error = try #require(throws: SplitError.self) { try split(Fixtures.path("photos-10.json"), into: temp.path) }
        #expect(error == .unknownChunks(directory: temp.path, count: 1))
    }

    @Test func aFeedThatChangedPastItsFirstMiBSinceTheSplitBeganIsRefused() throws {
        let temp = try TemporaryDirectory()
        var bytes = FeedGenerator(records: 3_000).bytes()
        #expect(bytes.count > 1_100_000)
        let feed = try temp.write("feed.json", bytes)
        let directory = temp.file("chunks")
        let splitter = Splitter(feedPath: feed, directory: directory, options: SplitOptions(chunkSize: 2_900))
        splitter.stopAfterChunks = 1
        #expect(throws: SplitError.interrupted(directory: directory, chunks: 1)) { try splitter.run() }
        // Same size, same first MiB: only regenerating chunk 1 and comparing can tell.
        let index = bytes[1_100_000...].firstIndex(of: UInt8(ascii: "#"))!
        bytes[index] = UInt8(ascii: "%")
        _ = try temp.write("feed.json", bytes)
        let error = try #require(throws: SplitError.self) { try split(feed, into: directory, chunkSize: 2_900) }
        #expect(error == .feedChanged(directory: directory, chunk: "chunk-000001.ndjson"))
        #expect(try split(feed, into: directory, chunkSize: 2_900, force: true).manifest.totalRecords == 3_000)
    }

    @Test func badInputLeavesNoChunkThatLooksComplete() throws {
        let temp = try TemporaryDirectory()
        let feed = try temp.write("bad.json", Array("[{\"a\":1},{\"a\":2},{\"a\":3},{\"a\":4},{\"a\" 5}]".utf8))
        let error = try #require(throws: FeedError.self) { try split(feed, into: temp.file("out")) }
        #expect(error.kind == .malformedJSON)
        #expect(FileOps.fileSize(temp.file("out/manifest.json")) == nil)
        let journal = try SplitJournal.load(from: temp.file("out/" + SplitJournal.fileName))
        #expect(journal.chunks.map(\.records) == [3])
        let names = try FileOps.contents(of: temp.file("out")).sorted()
        #expect(names == ["chunk-000001.ndjson", SplitJournal.fileName])
    }
}
