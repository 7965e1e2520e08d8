import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// `ingest import`, `resume` and `status` as a user runs them, signals included.
@Suite struct ImportCommandTests {
    func start(_ arguments: [String]) throws -> IngestBinary.Running { try IngestBinary.start(arguments) }
    func finish(_ running: IngestBinary.Running) -> IngestBinary.Outcome { IngestBinary.finish(running) }

    enum Stage: String, CaseIterable { case split, importing }

    /// Found by probing: a run whose first process rejected records (and stopped at
    /// --max-rejects) exited 0 when the resume that finished it rejected no more; the exit
    /// status is the run's, 3, as the exit statuses' table says (article "Pipelines").
    @Test func aRunFinishedByAResumeExitsThreeForTheRejectsOfItsFirstProcess() throws {
        let dir = try TemporaryDirectory()
        let lines = (0..<600).map { #"{"id":"p\#($0)","title":"t","views":\#($0 < 10 ? "\"many\"" : String($0))}"# }
        let feed = try dir.write("feed.ndjson", Array(lines.joined(separator: "\n").utf8))
        let pipeline = try dir.write("p.json", Array(#"""
            {"model":{"entities":[{"name":"Photo","attributes":[{"name":"id","type":"string","optional":false},
             {"name":"title","type":"string"},{"name":"views","type":"int64"}],"unique":[["id"]]}]},
             "feed":{"ndjson":true},"record":"Photo","mappings":{"Photo":{"attributes":{"id":"id","title":"title","views":"views"}}}}
            """#.utf8))
        let store = dir.file("s.sqlite")
        let first = try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store, "--chunk-size", "300",
                                          "--save-every", "50", "--max-rejects", "5", "--quiet"])
        #expect(first.status == 1, "\(first.stderr)")
        let resumed = try IngestBinary.run(["resume", store, "--max-rejects", "1000", "--quiet"])
        #expect(resumed.status == 3, "\(resumed.stderr)")
        let rejects = try String(contentsOfFile: store + ".rejects.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(rejects.count == 10)
    }

    /// Chunks with a committed save, read from the store's metadata as it runs.
    static func savedChunks(_ store: String) throws -> Int {
        Int(try SQLiteFile(store, readOnly: true).int("SELECT count(*) FROM _ingest_metadata WHERE key LIKE 'ingest.run.%.chunk.%'") ?? 0)
    }

    static let signals: [(Int32, Int32, String)] = [(SIGINT, 130, "SIGINT"), (SIGTERM, 143, "SIGTERM"), (SIGHUP, 129, "SIGHUP")]

    /// Each signal in two stages: as soon as the store exists (the split has just begun,
    /// no save yet) and a second in (chunks being imported). Without `INGEST_STRESS`, each
    /// signal once and each stage at least once (every signal takes the same path).
    @Test(arguments: Stress.pick(signals.flatMap { signal in Stage.allCases.map { (signal, $0) } },
                                 quick: [(signals[0], .split), (signals[1], .importing), (signals[2], .importing)]))
    func aSignalStopsAtASaveAndResumeFinishes(_ test: ((Int32, Int32, String), Stage)) throws {
        let ((signalNumber, exitCode, name), stage) = test
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 60_000).write(to: feed)
        let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
        let store = dir.file("photos.sqlite")
        let running = try start(["import", feed, "--pipeline", pipeline, "--store", store, "--workers", "2",
                                 "--save-every", "200", "--chunk-size", "1000"])
        switch stage {
        case .split:
            // The store is made after the signal handlers are in place, as the split starts.
            while !FileManager.default.fileExists(atPath: store) && running.process.isRunning { usleep(1_000) }
        case .importing:
            // Past the first save, whatever the machine's speed (a fixed sleep outlived a fast import).
            while running.process.isRunning && (try? Self.savedChunks(store)) ?? 0 == 0 { usleep(2_000) }
        }
        kill(running.process.processIdentifier, signalNumber)
        let stopped = finish(running)
        #expect(stopped.status == exitCode, "\(stopped.stderr)")
        #expect(stopped.stderr == "ingest: stopped at a save boundary (\(name)); continue with: ingest resume \(store)\n")

        let midway = finish(try start(["status", store]))
        #expect(midway.status == 0)
        #expect(midway.stdout.hasPrefix("\(store): import not finished (1 run(s))\n"), "\(midway.stdout)")
        #expect(midway.stdout.contains("feed: \(feed)"))

        let resumed = finish(try start(["resume", store, "--quiet"]))
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let done = finish(try start(["status", store]))
        #expect(done.stdout.hasPrefix("\(store): import finished (1 run(s))\n  Photo: 60,000, Photographer: 3,000\n  run 1: finished, started "), "\(done.stdout)")
        #expect(done.stdout.contains("\n    chunks: 60 of 60 complete; records done: 60,000; rejected: 0\n"))
    }
}

extension ImportCommandTests {
    /// A signal stops a run that waits for standard input at once (the read does not
    /// wait for input that may never come), and piping the whole feed in again finishes it.
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func aSignalStopsARunWaitingForStandardInput(_ signal: (Int32, Int32)) throws {
        let dir = try TemporaryDirectory()
        let bytes = FeedGenerator(records: 3_000, seed: 4).bytes()
        let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
        let store = dir.file("photos.sqlite")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: IngestBinary.path)
        process.arguments = ["import", "-", "--pipeline", pipeline, "--store", store, "--chunk-size", "500", "--quiet"]
        let input = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Part of the feed, then nothing: the writing end stays open.
        input.fileHandleForWriting.write(Data(bytes[0..<(bytes.count / 2)]))
        while process.isRunning && (try? Self.savedChunks(store)) ?? 0 == 0 { usleep(2_000) }
        usleep(300_000)
        let sent = Date()
        kill(process.processIdentifier, signal.0)
        process.waitUntilExit()
        #expect(Date().timeIntervalSince(sent) < 5, "stopped at once, not at the end of the input")
        #expect(process.terminationStatus == signal.1)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("continue with: the same feed on standard input again"), "\(stderr)")
        try? input.fileHandleForWriting.close()

        let again = try IngestBinary.run(["import", "-", "--pipeline", pipeline, "--store", store, "--chunk-size", "500", "--quiet"], stdin: bytes)
        #expect(again.status == 0, "\(again.stderr)")
        let coordinator = try PersistentStoreCoordinator(model: ImporterTests.spec.model, path: store)
        #expect(try coordinator.count("Photo") == 3_000)
    }
}

@Suite struct ImportKillTests {
    /// SIGKILL at twenty random moments (splitting, mapping, saving, committing), resuming
    /// after each; the store ends exactly as a clean import leaves it, every column.
    @Test func killedTwentyTimesTheStoreEndsAsACleanImport() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 20_000, seed: 11).write(to: feed)
        let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
        let command = ImportCommandTests()
        let clean = command.finish(try command.start(["import", feed, "--pipeline", pipeline, "--store", dir.file("clean.sqlite"),
                                                      "--workers", "2", "--save-every", "100", "--chunk-size", "500", "--quiet"]))
        #expect(clean.status == 0, "\(clean.stderr)")
        var seed: UInt64 = 99
        var killedMidway = 0
        for _ in 0..<20 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let delay = 0.02 + Double(seed >> 40) / Double(1 << 24) * 0.2
            let running = try command.start(["import", feed, "--pipeline", pipeline, "--store", dir.file("store.sqlite"),
                                             "--workers", "2", "--save-every", "100", "--chunk-size", "500", "--quiet"])
            Thread.sleep(forTimeInterval: delay)
            kill(running.process.processIdentifier, SIGKILL)
            let outcome = command.finish(running)
            if outcome.status != 0 { killedMidway += 1 }
        }
        let last = command.finish(try command.start(["resume", dir.file("store.sqlite"), "--quiet"]))
        #expect(last.status == 0, "\(last.stderr)")
        #expect(killedMidway >= 10, "most kills should land while the import runs")
        let expected = try ImporterTests().contents(dir.file("clean.sqlite"))
        let actual = try ImporterTests().contents(dir.file("store.sqlite"))
        #expect(actual.photos == expected.photos)
        #expect(actual.photographers == expected.photographers)
        #expect(try BatchPathTests().dump(dir.file("store.sqlite")) == BatchPathTests().dump(dir.file("clean.sqlite")),
                "every column of every row, as a clean import leaves it")
        let coordinator = try PersistentStoreCoordinator(model: ImporterTests.spec.model, path: dir.file("store.sqlite"))
        #expect(try coordinator.count("Photo") == 20_000)
        #expect(try coordinator.count("Photographer") == expected.photographers.count)
    }
}

extension ImportCommandTests {
    /// `status` tells a live run from a dead one by who holds the import lock: importing,
    /// stopped (SIGSTOP), or interrupted (killed: nobody holds it).
    @Test func statusTellsALiveRunFromAStoppedAndAKilledOne() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 60_000).write(to: feed)
        let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
        let store = dir.file("photos.sqlite")
        let running = try start(["import", feed, "--pipeline", pipeline, "--store", store, "--workers", "1", "--save-every", "100", "--chunk-size", "1000"])
        let pid = running.process.processIdentifier
        while running.process.isRunning && (try? Self.savedChunks(store)) ?? 0 == 0 { usleep(2_000) }
        let live = finish(try start(["status", store]))
        #expect(live.stdout.contains("  run 1: running (pid \(pid) on "), "\(live.stdout)")
        kill(pid, SIGSTOP)
        let stopped = finish(try start(["status", store]))
        #expect(stopped.stdout.contains("  run 1: running, but its process is stopped (pid \(pid) on "), "\(stopped.stdout)")
        #expect(stopped.stdout.contains(": kill -CONT \(pid) continues it), started "), "\(stopped.stdout)")
        kill(pid, SIGKILL)
        _ = finish(running)
        let killed = finish(try start(["status", store]))
        #expect(killed.stdout.contains("  run 1: interrupted (no process is importing it; continue with: ingest resume \(store)), started "), "\(killed.stdout)")
        #expect(try ImportStatus.read(store: store).latest.activity == .interrupted)
    }

    /// A member named by digits alone (a column per year) once crashed the batch path and
    /// left the store's run unfinished for good.
    @Test func aMemberNamedByDigitsImportsOnBothPaths() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("d.json", Array(#"[{"id":1,"1962":"5","2020":{"id":7,"1":"x"}}]"#.utf8))
        let outcome = finish(try start(["import", feed, "--store", dir.file("d.sqlite"), "--quiet"]))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try storeRows(dir.file("d.sqlite"), "SELECT id, f1962 FROM D") == ["1|5"])
        #expect(try storeRows(dir.file("d.sqlite"), "SELECT id, f1 FROM E2020") == ["7|x"])
        let spec = try PipelineInference.infer(feed: feed).spec
        var options = Importer.Options(feed: feed, store: dir.file("objects.sqlite"))
        options.objectPath = true
        _ = try Importer(spec: spec, options: options).run()
        #expect(try storeRows(dir.file("objects.sqlite"), "SELECT id, f1962 FROM D") == ["1|5"])
        for path in ["1962", #"["1962"]"#, "['1962']"] {
            #expect(try JSONPath(parsing: path).keyPrefix == ["1962"], "\(path)")
        }
    }
}
