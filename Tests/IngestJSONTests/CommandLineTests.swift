import Foundation
import IngestTestSupport
import Testing
@testable import IngestJSON

/// The `ingest` binary, run as a user would: output, exit codes, stdin, SIGKILL.
@Suite struct CommandLineTests {
    func ingest(_ arguments: String..., stdin: [UInt8]? = nil) throws -> IngestBinary.Outcome {
        try IngestBinary.run(arguments, stdin: stdin)
    }

    @Test func malformedFeedExitsOneWithALocatedMessage() throws {
        let temp = try TemporaryDirectory()
        let result = try ingest("split", Fixtures.path("malformed/missing-colon.json"), "--out", temp.path)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("ingest: \(Fixtures.path("malformed/missing-colon.json")): malformed JSON: object key and value must be separated by a colon (':') at line 3, column 8 (byte 21)\n"))
        #expect(result.stdout.isEmpty)
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try ingest("split").status == 2)
        #expect(try ingest("split", "feed.json", "--out", "x", "--chunk-size", "0").stderr.contains("--chunk-size must be at least 1"))
        #expect(try ingest("split", "feed.json", "--out", "x", "--ndjson", "--records-at", "a").status == 2)
        #expect(try ingest("split", "feed.json", "--out", "x", "--records-at", "a..b").status == 2)
        #expect(try ingest("frobnicate").status == 2)
        // bench refuses what its imports would refuse minutes later, and options it would ignore.
        let manyWorkers = try ingest("bench", "import", "--workers", "1,300")
        #expect(manyWorkers.status == 2 && manyWorkers.stderr.contains("--workers 300: at most 256"), "\(manyWorkers.stderr)")
        let noStore = try ingest("bench", "import", "--processes", "2")
        #expect(noStore.status == 2 && noStore.stderr.contains("--processes is for a PostgreSQL store"), "\(noStore.stderr)")
        #expect(try ingest("bench", "import", "--processes", "0", "--store", "postgresql:///x").status == 2)
        // A depth past 32 bits trapped converting it; now it is a usage error, on split and infer.
        for arguments in [["split", "feed.json", "--out", "x"], ["infer", "feed.json"]] {
            let tooDeep = try IngestBinary.run(arguments + ["--max-depth", "2147483648"])
            #expect(tooDeep.status == 2 && tooDeep.stderr.contains("--max-depth must be from 1 to 2147483647"), "\(arguments): \(tooDeep.stderr)")
        }
        #expect(try ingest("--help").status == 0)
    }

    /// infer reads the feed with the limits it is given, as split does (it kept 512 and 64 MiB).
    @Test func inferKeepsTheGivenLimits() throws {
        let temp = try TemporaryDirectory()
        let deep = try temp.write("deep.json", Array(("[{\"id\":\"1\",\"s\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}]").utf8))
        let refused = try ingest("infer", deep)
        #expect(refused.status == 1 && refused.stderr.contains("every record read (1) breaks the record size or depth limit, so there is nothing to infer from (raise --max-record-size or --max-depth); the first: record 1 nests deeper than the limit of 512 levels"), "\(refused.stderr)")
        #expect(try ingest("infer", deep, "--max-depth", "1000").status == 0)
        // Found by probing: a refused first record stopped the look for a header row; the rest are sampled.
        let deepFirst = try temp.write("deep-first.json", Array(("[{\"id\":\"1\",\"s\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
                                                                 + "},{\"id\":\"2\",\"s\":[1]},{\"id\":\"3\",\"s\":[2]}]").utf8))
        let sampled = try ingest("infer", deepFirst)
        #expect(sampled.status == 0 && sampled.stderr.contains("read 3 record(s)")
                && sampled.stderr.contains("1 record(s) read break the record size or depth limit: left out of the sample (they will be rejected)"), "\(sampled.stderr)")
        let big = try temp.write("big.json", Array(#"[{"id":"1","s":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}]"#.utf8))
        let tooBig = try ingest("infer", big, "--max-record-size", "10")
        #expect(tooBig.status == 1 && tooBig.stderr.contains("twice the record size limit of 10 bytes"), "\(tooBig.stderr)")
    }

    /// A header row's problems are placed in the feed (they said line 0, column 0) and
    /// named by the feed, as every other error is.
    @Test func headerRowErrorsNameTheFeedAndThePlace() throws {
        let temp = try TemporaryDirectory()
        let numbers = try temp.write("h.json", Array("[\n  [1,2],\n  [1,2]]".utf8))
        let result = try ingest("split", numbers, "--header-row", "--out", temp.file("a"))
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("ingest: \(numbers): record 1: the header row holds 1, not a column name at line 2, column 3 (byte 4)\n"), "\(result.stderr)")
        let surrogate = try temp.write("s.json", Array(#"[["a","\ud800"],[1,2]]"#.utf8))
        let second = try ingest("split", surrogate, "--header-row", "--out", temp.file("b"))
        #expect(second.stderr.hasPrefix("ingest: \(surrogate): record 1: lone surrogate escape \\ud800 in a string (it names no character; Ingest rejects it rather than replace it) at line 1, column 7 (byte 6)\n"),
                "\(second.stderr)")
        let piped = try ingest("split", "-", "--header-row", "--out", temp.file("c"), stdin: Array("[[1],[2]]".utf8))
        #expect(piped.stderr.hasPrefix("ingest: -: record 1: the header row holds 1, not a column name at byte 1\n"), "\(piped.stderr)")
    }

    @Test func inferRefusesWhatCanBeReadOnlyOnceByWhatItIs() throws {
        let device = try ingest("infer", "/dev/null")
        #expect(device.status == 2)
        #expect(device.stderr.contains("/dev/null is not a regular file (a pipe or a device), which can be read only once"), "\(device.stderr)")
        #expect(try ingest("infer", "-").stderr.contains("standard input can be read only once"))
    }

    /// generate renamed its file over whatever the path named: a link became a file, and
    /// as root a device node (/dev/full) was replaced. A device is written through, a link
    /// to a file is refused with its file untouched, and nothing is left behind.
    @Test func generateWritesThroughDevicesRefusesLinksAndLeavesNoTemporaryFile() throws {
        let temp = try TemporaryDirectory()
        let target = try temp.write("real.json", Array("old".utf8))
        let link = temp.file("link.json")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let linked = try ingest("generate", "--records", "3", "-o", link)
        #expect(linked.status == 1)
        #expect(linked.stderr == "ingest: cannot write \(link): it is a symbolic link to \(target); Ingest does not write through links (name the file itself)\n", "\(linked.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try FileOps.readFile(target) == Array("old".utf8))
        #expect(try ingest("generate", "--records", "3", "-o", "/dev/null").status == 0)
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
        let directory = try ingest("generate", "--records", "3", "-o", temp.path)
        #expect(directory.status == 1 && directory.stderr == "ingest: cannot write \(temp.path): Is a directory\n", "\(directory.stderr)")
        #expect(try ingest("generate", "-o", "").status == 2)
        let dangling = temp.file("dangling.json")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "made.json")
        let toNothing = try ingest("generate", "--records", "2", "-o", dangling)
        #expect(toNothing.status == 1)
        #expect(toNothing.stderr == "ingest: cannot write \(dangling): it is a symbolic link to no file; Ingest does not write through links\n", "\(toNothing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.file("made.json")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path).sorted() == ["dangling.json", "link.json", "real.json"])
    }

    @Test func missingFileExitsOne() throws {
        let result = try ingest("split", "/nonexistent/feed.json", "--out", "/tmp/x")
        #expect(result.status == 1)
        #expect(result.stderr == "ingest: cannot open /nonexistent/feed.json: No such file or directory\n")
    }

    @Test func generatePipedIntoSplitFromStandardInput() throws {
        let temp = try TemporaryDirectory()
        let generated = try ingest("generate", "--records", "25", "--seed", "3")
        #expect(generated.status == 0)
        #expect(Array(generated.stdout.utf8) == FeedGenerator(records: 25, seed: 3, style: .realistic).bytes(), "realistic by default")
        let classic = try ingest("generate", "--records", "25", "--seed", "3", "--style", "classic")
        #expect(Array(classic.stdout.utf8) == FeedGenerator(records: 25, seed: 3).bytes())
        let split = try ingest("split", "-", "--out", temp.path, "--chunk-size", "10", stdin: Array(generated.stdout.utf8))
        #expect(split.status == 0, "\(split.stderr)")
        #expect(split.stdout.contains("-: 25 records"))
        #expect(split.stdout.contains("3 chunk(s) of up to 10 records"))
        let manifest = try JSONDecoder().decode(SplitManifest.self, from: Data(FileOps.readFile(temp.file("manifest.json"))))
        #expect(manifest.feed.path == "-" && manifest.totalRecords == 25 && manifest.feed.byteSize == generated.stdout.utf8.count)
    }

    @Test func quietPrintsNothing() throws {
        let temp = try TemporaryDirectory()
        let result = try ingest("split", Fixtures.path("photos-10.json"), "--out", temp.path, "--quiet")
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty)
    }

    /// SIGKILL at a few moments during a split; running it again gives the files of
    /// an uninterrupted split.
    @Test func killedSplitResumesToIdenticalFiles() throws {
        let temp = try TemporaryDirectory()
        let feed = temp.file("feed.json")
        try FeedGenerator(records: 60_000).write(to: feed)
        #expect(try ingest("split", feed, "--out", temp.file("reference"), "--chunk-size", "500", "--quiet").status == 0)
        let reference = try FileOps.contents(of: temp.file("reference")).sorted()

        var interrupted = 0
        for (attempt, delay) in [0.03, 0.1, 0.25].enumerated() {
            let directory = temp.file("killed-\(attempt)")
            let running = try IngestBinary.start(["split", feed, "--out", directory, "--chunk-size", "500", "--quiet"])
            Thread.sleep(forTimeInterval: delay)
            kill(running.process.processIdentifier, SIGKILL)
            _ = IngestBinary.finish(running)
            if FileOps.fileSize(directory + "/manifest.json") == nil { interrupted += 1 }
            let resumed = try ingest("split", feed, "--out", directory, "--chunk-size", "500", "--quiet")
            #expect(resumed.status == 0, "\(resumed.stderr)")
            let names = try FileOps.contents(of: directory).sorted()
            #expect(names == reference, "killed after \(delay) s: more \(Set(names).subtracting(reference).sorted()), fewer \(Set(reference).subtracting(names).sorted())")
            for name in reference {
                #expect(try FileOps.readFile(directory + "/" + name) == FileOps.readFile(temp.file("reference/" + name)), "\(name)")
            }
        }
        #expect(interrupted > 0, "no kill landed before the split finished")
    }
}
