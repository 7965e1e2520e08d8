import Foundation
@testable import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline
#if canImport(Glibc)
import Glibc
#endif

/// Ingest writes and removes only what it made: never through a link, never over a device
/// or FIFO, never a user's file in a directory it was given (issue 38).
@Suite struct OwnershipTests {
    static var pipeline: String { FaultTests.pipeline }

    /// What stands at the path a command is told to write.
    enum Target: String, CaseIterable, Sendable { case link, fifo, device, directory }

    /// A test directory holding the user's files: `user.txt`, a link to it, a FIFO, and
    /// `userdir/` with a note, a `*.tmp` file and a `build.tmp/` directory.
    struct UserFiles {
        let dir: TemporaryDirectory
        init() throws {
            dir = try TemporaryDirectory()
            try dir.write("user.txt", Array("the user's\n".utf8))
            try FileManager.default.createSymbolicLink(atPath: dir.file("link"), withDestinationPath: "user.txt")
            #expect(mkfifo(dir.file("fifo"), 0o644) == 0)
            try FileManager.default.createDirectory(atPath: dir.file("userdir/build.tmp"), withIntermediateDirectories: true)
            try dir.write("userdir/notes.txt", Array("notes\n".utf8))
            try dir.write("userdir/old.tmp", Array("kept\n".utf8))
            try dir.write("userdir/build.tmp/out.o", Array("object\n".utf8))
        }

        func path(_ target: Target) -> String {
            switch target {
            case .link: dir.file("link")
            case .fifo: dir.file("fifo")
            case .device: "/dev/null"
            case .directory: dir.file("userdir")
            }
        }

        /// Every user's file as it was made, whatever else the directory now holds.
        func expectUntouched(_ context: String) throws {
            #expect(try FileOps.readFile(dir.file("user.txt")) == Array("the user's\n".utf8), "\(context)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir.file("link")) == "user.txt", "\(context)")
            var info = stat()
            #expect(lstat(dir.file("fifo"), &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "\(context)")
            #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "\(context)")
            #expect(try FileOps.readFile(dir.file("userdir/notes.txt")) == Array("notes\n".utf8), "\(context)")
            #expect(try FileOps.readFile(dir.file("userdir/old.tmp")) == Array("kept\n".utf8), "\(context)")
            #expect(try FileOps.readFile(dir.file("userdir/build.tmp/out.o")) == Array("object\n".utf8), "\(context)")
            let top = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasPrefix("feed") && !$0.hasPrefix("s-") }
            #expect(top.sorted() == ["fifo", "link", "user.txt", "userdir"], "\(context): \(top.sorted())")
            #expect(!FileManager.default.fileExists(atPath: "/dev/null.lock"), "\(context)")
        }
    }

    /// Reads a FIFO to its end on a thread of its own, as a reader at the other end would.
    static func drain(_ fifo: String) -> Thread {
        let thread = Thread {
            let fd = open(fifo, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            close(fd)
        }
        thread.start()
        return thread
    }

    /// Every command that writes a file, pointed at a link to the user's file, a FIFO, a
    /// device and a directory of the user's: each writes through a device or FIFO, refuses
    /// the rest with the reason, and leaves every file of the user's as it was.
    @Test(arguments: Target.allCases)
    func everyCommandThatWritesAFileLeavesTheUsersFilesAsTheyWere(_ kind: Target) throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let target = user.path(kind)
        let linkRefused = "cannot write \(target): it is a symbolic link to user.txt; Ingest does not write through links (name the file itself)"
        let notAStore = switch kind {
        case .link: "it is a symbolic link to user.txt; Ingest does not write through links (name the store file itself)"
        case .fifo: "it is a FIFO"
        case .device: "it is a device"
        case .directory: "it is a directory"
        }
        let written: (status: Int32, stderr: String?) = switch kind {
        case .link: (1, "ingest: \(linkRefused)\n")
        case .fifo, .device: (0, nil)
        case .directory: (1, "ingest: cannot write \(target): Is a directory\n")
        }
        let notADirectory = "ingest: cannot use as a directory \(target): Not a directory\n"
        var commands: [(arguments: [String], status: Int32, stderr: String?)] = [
            (["generate", "--records", "20", "-o", target], written.status, written.stderr),
            (["infer", feed, "-o", target], written.status, written.stderr),
            (["codegen", Self.pipeline, "-o", target], written.status, written.stderr),
            (["split", feed, "--out", target, "--quiet"], kind == .directory ? 0 : 1, kind == .directory ? "" : notADirectory),
            (["import", feed, "--pipeline", Self.pipeline, "--store", target, "--quiet"], 1, "ingest: \(target) is not an Ingest store: \(notAStore)\n"),
            (["import", feed, "--pipeline", Self.pipeline, "--store", user.dir.file("s-\(kind).sqlite"), "--chunks", target, "--quiet"],
             kind == .directory ? 0 : 1,
             kind == .directory ? "" : "ingest: --chunks \(target) is not a directory: give a directory (new or one of Ingest's chunk directories) for the chunk files\n"),
            (["history", target], 1, kind == .link ? "ingest: \(target) is not an Ingest store: the file is not a SQLite database\n"
                                                   : "ingest: \(target) is not an Ingest store: \(notAStore)\n"),
        ]
        // The benchmark checks its chart's path before it benchmarks; through a device it would run in full.
        if kind == .link || kind == .directory {
            commands.append((["bench", "import", "--svg", target], 1, written.stderr))
        }
        for command in commands {
            let reader = kind == .fifo && command.status == 0 ? Self.drain(target) : nil
            let outcome = try IngestBinary.run(command.arguments)
            if let reader { while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) } }
            let context = "\(kind): ingest \(command.arguments.joined(separator: " "))"
            #expect(outcome.status == command.status, "\(context): \(outcome.stderr)")
            if let stderr = command.stderr { #expect(outcome.stderr == stderr, "\(context)") }
            try user.expectUntouched(context)
        }
        if kind == .directory {
            // The import took the split's chunks for its own (the same feed) and removed them
            // when it finished, with its lock: the user's files are all that is left.
            #expect(try FileManager.default.contentsOfDirectory(atPath: target).sorted() == ["build.tmp", "notes.txt", "old.tmp"])
        }
    }

    /// Links of the names Ingest gives its own files, in the chunk directory and beside the
    /// store, were followed: their files were overwritten, and the chunk directory removed.
    @Test func linksNamedLikeIngestsOwnFilesAreNeverFollowed() throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let chunks = user.dir.file("s-chunks")
        try FileManager.default.createDirectory(atPath: chunks, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: chunks + "/chunk-000001.members", withDestinationPath: user.dir.file("user.txt"))
        let store = user.dir.file("s-store.sqlite")
        try FileManager.default.createSymbolicLink(atPath: store + ".report.json.tmp", withDestinationPath: user.dir.file("user.txt"))
        try FileManager.default.createSymbolicLink(atPath: store + ".rejects.ndjson.tmp", withDestinationPath: user.dir.file("user.txt"))
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--chunks", chunks, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        try user.expectUntouched("import")
        // The chunk files went; the link, not Ingest's, stays, and so does its directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: chunks).sorted() == ["chunk-000001.members"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: store + ".report.json.tmp") == user.dir.file("user.txt"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: store + ".rejects.ndjson.tmp") == user.dir.file("user.txt"))
        #expect(FileOps.fileSize(store + ".report.json") != nil)

        // The report's own name a link: refused before the run begins, nothing recorded.
        let other = user.dir.file("s-other.sqlite")
        try FileManager.default.createSymbolicLink(atPath: other + ".report.json", withDestinationPath: user.dir.file("user.txt"))
        let refused = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", other, "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr == "ingest: cannot write \(other).report.json: it is a symbolic link to \(user.dir.file("user.txt")); Ingest does not write through links (name the file itself)\n",
                "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other))
        try user.expectUntouched("import with a linked report")
    }

    /// The store's lock file was opened through a link of its name and emptied: the file the
    /// link named lost its contents.
    @Test func aLinkNamedLikeTheStoresLockIsNeverFollowed() throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let store = user.dir.file("s-store.sqlite")
        try FileManager.default.createSymbolicLink(atPath: store + ".lock", withDestinationPath: user.dir.file("user.txt"))
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: cannot open \(store).lock: Too many levels of symbolic links\n", "\(outcome.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store))
        try user.expectUntouched("import with a linked lock")
    }

    /// A split removed every `*.tmp` file of its directory (`--out /tmp` would have emptied
    /// /tmp of them), and failed on a directory so named; only its own temporary chunk files go.
    @Test func aSplitRemovesOnlyItsOwnTemporaryChunkFiles() throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let out = user.dir.file("userdir")
        try user.dir.write("userdir/.chunk-000001.ndjson.tmp", Array("a split killed while it wrote".utf8))
        try FileManager.default.createSymbolicLink(atPath: out + "/.chunk-000002.ndjson.tmp", withDestinationPath: "notes.txt")
        let outcome = try IngestBinary.run(["split", feed, "--out", out, "--chunk-size", "10", "--quiet"])
        // The link of a temporary chunk's name is not Ingest's: the split stops there, naming it.
        #expect(outcome.status == 1)
        #expect(outcome.stderr == "ingest: cannot create \(out)/.chunk-000002.ndjson.tmp: Too many levels of symbolic links\n", "\(outcome.stderr)")
        try user.expectUntouched("split")
        #expect(!FileManager.default.fileExists(atPath: out + "/.chunk-000001.ndjson.tmp"), "its own stale temporary file went")
        try FileManager.default.removeItem(atPath: out + "/.chunk-000002.ndjson.tmp")
        let again = try IngestBinary.run(["split", feed, "--out", out, "--chunk-size", "10", "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        try user.expectUntouched("split again")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted()
                == ["build.tmp", "chunk-000001.ndjson", "chunk-000002.ndjson", "chunk-000003.ndjson", "manifest.json", "notes.txt", "old.tmp"])
    }

    /// `--delete-store` on a path with no store removed STORE.chunks/ whole, the user's files in it too.
    @Test func deleteStoreRemovesOnlyTheStoresOwnFiles() throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let store = user.dir.file("s-store.sqlite")
        try FileManager.default.createDirectory(atPath: store + ".chunks/run-0001", withIntermediateDirectories: true)
        try user.dir.write("s-store.sqlite.chunks/mine.txt", Array("mine\n".utf8))
        try user.dir.write("s-store.sqlite.chunks/run-0001/mine.txt", Array("mine\n".utf8))
        let first = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--delete-store", "--quiet", "--keep-chunks"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try FileOps.readFile(store + ".chunks/mine.txt") == Array("mine\n".utf8))
        #expect(try FileOps.readFile(store + ".chunks/run-0001/mine.txt") == Array("mine\n".utf8))
        // Now a store: its files and its kept chunks go, the user's stay.
        let second = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--delete-store", "--quiet"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store + ".chunks").sorted() == ["mine.txt", "run-0001"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: store + ".chunks/run-0001") == ["mine.txt"])
        let status = try IngestBinary.run(["status", store])
        #expect(status.stdout.contains("run 1"), "the store was made anew: \(status.stdout)")
        #expect(!status.stdout.contains("run 2"), "\(status.stdout)")
    }

    /// Two stores given one --chunks directory: the second deleted the first's temporary file,
    /// blamed a store that never imported, and recorded a run it could never finish.
    @Test func twoStoresCannotShareAChunkDirectory() throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json"), other = user.dir.file("feed-other.json")
        try FeedGenerator(records: 30).write(to: feed)
        try FeedGenerator(records: 40, seed: 7).write(to: other)
        let chunks = user.dir.file("s-chunks")
        let first = user.dir.file("s-first.sqlite"), second = user.dir.file("s-second.sqlite")
        // While an import into the first store holds the directory.
        let held = try ChunkDirectoryLock(directory: chunks, store: first)
        let busy = try IngestBinary.run(["import", other, "--pipeline", Self.pipeline, "--store", second, "--chunks", chunks, "--quiet"])
        #expect(busy.status == 1)
        #expect(busy.stderr == "ingest: the chunk directory \(chunks) is in use by an import into \(first): give this import a --chunks directory of its own\n",
                "\(busy.stderr)")
        #expect(!FileManager.default.fileExists(atPath: second), "nothing recorded in a store")
        held.release()

        // After the first finished, keeping its chunks: the second is refused before it records a run.
        let done = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", first, "--chunks", chunks, "--keep-chunks", "--quiet"])
        #expect(done.status == 0, "\(done.stderr)")
        let refused = try IngestBinary.run(["import", other, "--pipeline", Self.pipeline, "--store", second, "--chunks", chunks, "--quiet"])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("ingest: \(chunks) holds the split of a different feed (the feed it was split from had "), "\(refused.stderr)")
        let none = #expect(throws: (any Error).self, "no run recorded") { try ImportStatus.read(store: second) }
        #expect(none.map { "\($0)" } == "\(second) is an Ingest store, but no import has written to it")
        #expect(try IngestBinary.run(["status", first, "--check"]).status == 0)
    }

    /// An unusable --chunks (a file, the store itself) recorded run 1 before failing, and
    /// `status` then advised a resume that failed the same way forever.
    @Test(arguments: ["a file", "the store"])
    func anUnusableChunkDirectoryIsRefusedBeforeARunIsRecorded(_ what: String) throws {
        let user = try UserFiles()
        let feed = user.dir.file("feed.json")
        try FeedGenerator(records: 30).write(to: feed)
        let store = user.dir.file("s-store.sqlite")
        _ = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--quiet"])
        let chunks = what == "a file" ? user.dir.file("user.txt") : store
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", store, "--chunks", chunks, "--again", "--quiet"])
        #expect(outcome.status == 1)
        let reason = what == "a file" ? "not a directory" : "the store itself"
        #expect(outcome.stderr == "ingest: --chunks \(chunks) is \(reason): give a directory (new or one of Ingest's chunk directories) for the chunk files\n",
                "\(outcome.stderr)")
        #expect(try ImportStatus.read(store: store).runs.count == 1)
        try user.expectUntouched("import --chunks \(what)")
    }
}
