import Synchronization
import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON
@testable import IngestPipeline
@testable import IngestStore

/// A full disk at each place an import writes: the run stops with the file and the free
/// space named, nothing half-written looks complete, and once there is room a resume
/// ends exactly as a clean import.
@Suite(.serialized) struct DiskFullTests {
    static var spec: PipelineSpec { RecordMapperTests.spec }

    /// 300 generated records and three bad ones (so there is a rejects file to write).
    func feed(_ dir: TemporaryDirectory) throws -> String {
        var lines = String(decoding: FeedGenerator(records: 300, seed: 21, ndjson: true).bytes(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        for position in [5, 150, 290] { lines[position] = #"{"id":"bad\#(position)","views":"lots"}"# }
        return try dir.write("feed.json", Array(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8))
    }

    func importer(_ feed: String, _ store: String) -> Importer {
        Importer(spec: Self.spec, options: .init(feed: feed, store: store, workers: 2, saveEvery: 40, chunkSize: 100))
    }

    /// Photo id → photographer id, and the rejects file.
    func contents(_ store: String) throws -> ([String: String], String) {
        let context = ObjectContext(coordinator: try PersistentStoreCoordinator(existingStoreAt: store))
        let photos = try context.performAndWait {
            var photos: [String: String] = [:]
            for photo in try context.fetch("Photo") {
                photos[photo["id"]!.stringValue!] = photo.object(forKey: "whoTook")?["id"]?.stringValue ?? "-"
            }
            return photos
        }
        return (photos, try String(contentsOfFile: store + ".rejects.ndjson", encoding: .utf8))
    }

    enum Place: String, CaseIterable { case chunk, manifest, rejects, report, store }

    @Test(arguments: Place.allCases)
    func aFullDiskStopsTheRunAndAResumeEndsAsACleanImport(_ place: Place) throws {
        let dir = try TemporaryDirectory()
        let feed = try feed(dir)
        _ = try importer(feed, dir.file("clean.sqlite")).run()
        let clean = try contents(dir.file("clean.sqlite"))

        let store = dir.file("store.sqlite")
        let chunks = store + ".chunks/run-0001"
        // Full paths, in this test's own directory: the other cases run at the same time.
        let target = switch place {
        case .chunk: chunks + "/.chunk-000002.ndjson.tmp"
        case .manifest: chunks + "/manifest.json"
        case .rejects: store + ".rejects.ndjson"
        case .report: store + ".report.json"
        case .store: store
        }
        switch place {
        case .store: PersistentStoreCoordinator.injectedCommitFailures.withLock { $0[store] = 1 }
        case .report: WriteFaults.fail(pathsEndingWith: target, errno: EFBIG)
        default: WriteFaults.fail(pathsEndingWith: target, errno: ENOSPC)
        }
        defer {
            WriteFaults.clear(pathsEndingWith: target)
            PersistentStoreCoordinator.injectedCommitFailures.withLock { $0[store] = nil }
        }
        let error = #expect(throws: (any Error).self) { try importer(feed, store).run() }
        let message = "\(error.map { "\($0)" } ?? "")"
        switch place {
        case .chunk:
            #expect(message.hasPrefix("cannot write \(chunks)/.chunk-000002.ndjson.tmp: No space left on device ("), "\(message)")
            #expect(!FileManager.default.fileExists(atPath: chunks + "/chunk-000002.ndjson"), "no half chunk under its real name")
            #expect(!FileManager.default.fileExists(atPath: chunks + "/manifest.json"), "the split does not look complete")
        case .manifest:
            #expect(message.hasPrefix("cannot write \(chunks)/manifest.json: No space left on device ("), "\(message)")
            #expect(!FileManager.default.fileExists(atPath: chunks + "/manifest.json"))
        case .rejects:
            #expect(message.hasPrefix("cannot write \(store).rejects.ndjson: No space left on device ("), "\(message)")
            #expect(!FileManager.default.fileExists(atPath: store + ".rejects.ndjson"), "no partial rejects file")
        case .report:
            #expect(message.hasPrefix("cannot write \(store).report.json: File too large"), "\(message)")
        case .store:
            #expect(message.hasPrefix("cannot write \(store): the disk is full ("), "\(message)")
            #expect(try ImportStatus.check(store: store).isEmpty, "the failed save left nothing behind")
        }
        #expect(message.hasSuffix(" free on that file system)"), "\(message)")

        // Room again: resuming finishes, and the store and rejects equal a clean import's.
        WriteFaults.clear(pathsEndingWith: target)
        let report = try importer(feed, store).run()
        #expect(report.rejected == 3)
        let resumed = try contents(store)
        #expect(resumed.0 == clean.0)
        #expect(resumed.1 == clean.1)
        #expect(try ImportStatus.check(store: store).isEmpty)
    }

    /// A tmpfs mounted with `options` under `dir`, or nil (having said why) where mount(8)
    /// is not allowed.
    /// A tmpfs mounted in `dir`; where none can be (no root, no mount(8), a container
    /// without the right), the test is cancelled and reported as skipped, saying why.
    static func mountTmpfs(in dir: TemporaryDirectory, options: String) throws -> String {
        let mountPoint = dir.file("tmpfs")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", options, "tmpfs", mountPoint]
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil, { mount.waitUntilExit(); return mount.terminationStatus == 0 }() else {
            try Test.cancel("cannot mount a tmpfs here (needs root and mount(8)): no real file system error is made")
        }
        return mountPoint
    }

    static func unmount(_ mountPoint: String) {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = [mountPoint]
        try? umount.run()
        umount.waitUntilExit()
    }

    /// A chunk directory on a read-only file system (root may write anywhere else).
    @Test func aChunkDirectoryThatCannotBeWrittenIsNamedWithTheReason() throws {
        let dir = try TemporaryDirectory()
        let mountPoint = try Self.mountTmpfs(in: dir, options: "ro,size=1m")
        defer { Self.unmount(mountPoint) }
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 50).write(to: feed)
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", FaultTests.pipeline, "--store", dir.file("store.sqlite"),
                                            "--chunks", mountPoint + "/chunks"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: cannot create directory \(mountPoint)/chunks: Read-only file system\n", "\(outcome.stderr)")
    }

    /// Once for real: a 3 MiB tmpfs fills up during the split. Needs root and mount(8);
    /// elsewhere the test is reported as skipped, with why.
    @Test func aRealFullFileSystemStopsTheRunAndAResumeWithRoomFinishes() throws {
        let dir = try TemporaryDirectory()
        let mountPoint = try Self.mountTmpfs(in: dir, options: "size=3m")
        defer { Self.unmount(mountPoint) }
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 20_000, seed: 4).write(to: feed)   // about 8 MB: its chunks cannot fit
        let store = dir.file("store.sqlite")
        let options = Importer.Options(feed: feed, store: store, chunks: mountPoint + "/chunks", workers: 2)
        let error = #expect(throws: IOError.self) { try Importer(spec: Self.spec, options: options).run() }
        #expect(error?.isDiskFull == true)
        #expect("\(error!)".hasPrefix("cannot write \(mountPoint)/chunks/.chunk-00000"), "\(error!)")
        #expect("\(error!)".contains(".ndjson.tmp: No space left on device ("), "\(error!)")
        #expect("\(error!)".hasSuffix(" free on that file system)"), "\(error!)")
        #expect(!FileManager.default.fileExists(atPath: mountPoint + "/chunks/manifest.json"))

        // Room: the chunks go to a roomy directory now (the store records where they are).
        var roomy = options
        roomy.chunks = dir.file("chunks")
        let report = try Importer(spec: Self.spec, options: roomy).run()
        #expect(report.counts["Photo"] == 20_000)
        #expect(try ImportStatus.check(store: store).isEmpty)
    }
}
