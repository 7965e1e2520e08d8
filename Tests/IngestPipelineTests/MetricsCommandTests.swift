import Foundation
import IngestJSON
import IngestTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--metrics-port` and `--metrics-file` on `ingest import`: the endpoint answers while the
/// run goes, its counters only grow, and the file written at the end holds what the
/// run's report says, on both stores.
@Suite struct MetricsCommandTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    /// A feed of `records` photos, each given twice (so half the records update), with 7
    /// records lacking their key first (rejected).
    static func feed(in dir: TemporaryDirectory, records: Int) throws -> String {
        let generated = dir.file("generated.json")
        try FeedGenerator(records: records, seed: 5, repeatKeys: 2).write(to: generated)
        let text = try String(contentsOfFile: generated, encoding: .utf8)
        let bad = (0..<7).map { #"{"title":"no id \#($0)"},"# + "\n" }.joined()
        return try dir.write("feed.json", Array(("[\n" + bad + text.dropFirst(2)).utf8))
    }

    @Test func theEndpointAnswersDuringASQLiteRunAndTheFileMatchesTheReport() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = try Self.feed(in: dir, records: 20_000)
        let store = dir.file("s.sqlite"), file = dir.file("metrics.prom")
        let (outcome, scrapes) = try Self.importScraping(["import", feed, "--pipeline", Self.photos, "--store", store, "--workers", "2",
                                                          "--save-every", "500", "--metrics-file", file])
        #expect(outcome.status == 3, "rejects make exit status 3: \(outcome.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: store + ".report.json"))) as! [String: Any]
        let outcomes = report["outcomes"] as! [String: Int]
        let expected = Expected(imported: report["imported"] as! Int, rejected: report["rejectedThisRun"] as! Int,
                                inserted: outcomes["inserted"]!, updated: outcomes["updated"]!, unchanged: outcomes["unchanged"]!,
                                chunks: report["chunks"] as! Int)
        #expect(expected.imported == 20_000 && expected.rejected == 7 && expected.updated == 10_000)
        try Self.check(file: file, scrapes: scrapes, store: "sqlite", against: expected, feed: feed)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func theEndpointAnswersDuringAPostgreSQLRunAndTheFileMatchesTheReport() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let feed = try Self.feed(in: dir, records: 20_000)
        let url = try server.createDatabase("metrics")
        let file = dir.file("metrics.prom")
        let (outcome, scrapes) = try Self.importScraping(["import", feed, "--pipeline", Self.photos, "--store", url, "--workers", "2",
                                                          "--save-every", "500", "--metrics-file", file])
        #expect(outcome.status == 3, "rejects make exit status 3: \(outcome.stderr)")
        // The printed report: "… imported 20,000 records in 5 chunk(s) and rejected 7 …", "records: N inserted, N updated, N unchanged".
        func number(after pattern: String) throws -> Int {
            let range = try #require(outcome.stdout.range(of: pattern, options: .regularExpression), "\(pattern) in \(outcome.stdout)")
            return Int(outcome.stdout[range].filter(\.isNumber))!
        }
        let expected = Expected(imported: try number(after: #"imported [0-9,]+ record"#), rejected: try number(after: #"and rejected [0-9,]+"#),
                                inserted: try number(after: #"[0-9,]+ inserted"#), updated: try number(after: #"[0-9,]+ updated"#),
                                unchanged: try number(after: #"[0-9,]+ unchanged"#), chunks: try number(after: #"in [0-9,]+ chunk"#))
        #expect(expected.imported == 20_000 && expected.rejected == 7 && expected.updated == 10_000, "\(outcome.stdout)")
        try Self.check(file: file, scrapes: scrapes, store: "postgresql", against: expected, feed: feed)
    }

    @Test func aMetricsFileThatIsALinkIsRefusedBeforeTheRunAndItsTargetKept() throws {
        let dir = try TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let target = try dir.write("theirs.txt", Array("not Ingest's\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: dir.file("metrics.prom"), withDestinationPath: target)
        let feed = try Self.feed(in: dir, records: 100)
        let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", dir.file("s.sqlite"),
                                            "--metrics-file", dir.file("metrics.prom")])
        #expect(outcome.status != 0 && outcome.stderr.contains("metrics.prom"), "\(outcome.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "not Ingest's\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("s.sqlite")), "nothing imported")
    }

    @Test(arguments: ["import", "resume", "join", "replay"]) func everyCommandThatImportsTakesTheMetricsOptions(command: String) throws {
        let help = try IngestBinary.run([command, "--help"])
        #expect(help.stdout.contains("--metrics-file") && help.stdout.contains("--metrics-port") && help.stdout.contains("--metrics-host"))
    }

    @Test func aPortOutOfRangeOrAHostWithoutAPortIsRefused() throws {
        let port = try IngestBinary.run(["import", "feed.json", "--store", "s.sqlite", "--metrics-port", "70000"])
        #expect(port.status == 2 && port.stderr.contains("--metrics-port must be from 0 to 65535"), "\(port.stderr)")
        let host = try IngestBinary.run(["import", "feed.json", "--store", "s.sqlite", "--metrics-host", "0.0.0.0"])
        #expect(host.status == 2 && host.stderr.contains("--metrics-host goes with --metrics-port"), "\(host.stderr)")
    }

    struct Expected {
        var imported, rejected, inserted, updated, unchanged, chunks: Int
    }

    /// What the endpoint answered while the run went (each scrape's text), and the run's outcome.
    static func importScraping(_ arguments: [String]) throws -> (IngestBinary.Outcome, [String]) {
        let port = try freePort()
        let running = try IngestBinary.start(arguments + ["--metrics-port", String(port)])
        var scrapes: [String] = []
        var notFound: String?
        while running.process.isRunning {
            if let text = get("/metrics", port: port), running.process.isRunning { scrapes.append(text) }
            if notFound == nil { notFound = get("/nope", port: port) }
            usleep(20_000)
        }
        let outcome = IngestBinary.finish(running)
        #expect(notFound?.hasPrefix("HTTP/1.0 404") == true, "\(notFound ?? "no answer")")
        #expect(outcome.stderr.contains("metrics at http://127.0.0.1:\(port)/metrics"), "\(outcome.stderr)")
        return (outcome, scrapes)
    }

    static func check(file: String, scrapes: [String], store: String, against expected: Expected, feed: String) throws {
        #expect(!scrapes.isEmpty, "the endpoint never answered during the run")
        let final = try parse(try String(contentsOfFile: file, encoding: .utf8))
        func value(_ name: String, _ labels: String) -> Double? { final["\(name){store=\"\(store)\"\(labels)}"] }
        #expect(value("ingest_records_total", ",outcome=\"imported\"") == Double(expected.imported))
        #expect(value("ingest_records_total", ",outcome=\"rejected\"") == Double(expected.rejected))
        #expect(value("ingest_objects_total", ",entity=\"Photo\",outcome=\"inserted\"") == Double(expected.inserted))
        #expect(value("ingest_objects_total", ",entity=\"Photo\",outcome=\"updated\"") == Double(expected.updated))
        #expect(value("ingest_objects_total", ",entity=\"Photo\",outcome=\"unchanged\"") == Double(expected.unchanged))
        #expect(value("ingest_chunks_total", ",state=\"done\"") == Double(expected.chunks))
        #expect(value("ingest_chunks_total", ",state=\"split\"") == Double(expected.chunks))
        let bytes = try #require(value("ingest_feed_bytes_total", ""))
        let feedSize = try FileManager.default.attributesOfItem(atPath: feed)[.size] as! Int
        #expect(bytes > 0 && bytes <= Double(feedSize))
        let saves = try #require(value("ingest_save_duration_seconds_count", ""))
        #expect(saves >= Double(expected.chunks), "a save at least per chunk")
        #expect((value("ingest_stage_seconds_total", ",stage=\"save\"") ?? 0) > 0)
        // Counters only grow, and no scrape saw more than the end.
        let imported = try scrapes.map { try parse($0)["ingest_records_total{store=\"\(store)\",outcome=\"imported\"}"] ?? 0 }
        #expect(imported == imported.sorted(), "\(imported)")
        #expect(imported.allSatisfy { $0 <= Double(expected.imported) }, "\(imported)")
    }

    /// Prometheus' text format: `name{labels} value` per line, comments skipped.
    static func parse(_ text: String) throws -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("HTTP/") && line.contains(" ") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// A port nobody listens on now (bound to 0 and closed: the system hands out ports in turn).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The whole answer to `GET path` on 127.0.0.1:`port`, or nil when nothing listens.
    static func get(_ path: String, port: Int) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return nil }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += buffer[..<count]
        }
        return answer.isEmpty ? nil : String(decoding: answer, as: UTF8.self)
    }
}
