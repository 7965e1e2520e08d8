import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Random records, with member names of every awkward kind (digits, empty, dots,
/// brackets, quotes, unicode) and nesting, imported with an inferred pipeline through
/// both write paths: the same store, row for row, and the same rejects.
@Suite struct WritePathPropertyTests {
    /// The same seed, the same feed.
    typealias Random = SplitMix64

    static let names = ["1962", "", "a.b", "a[0]", "[x]", "\"q\"", "it's", "日本", "a b", "0", "01", "-1", "$", "\\", "x.1", "é", "e\u{301}",
                        "Title", "title", "😀", "[\"k\"]", "'", "."]

    enum Kind: CaseIterable { case int, text, double, bool, date, list }

    static func value(_ kind: Kind, _ random: inout Random, wrong: Bool) -> Any {
        if random.below(10) == 0 { return NSNull() }
        if wrong { return random.pick([["not": "scalar"], "x\(random.below(9))", [1, 2]] as [Any]) }
        switch kind {
        case .int: return random.below(2) == 0 ? random.below(1_000_000) - 500_000 : Int.max - random.below(3)
        case .text: return random.pick(["plain", "caf\u{e9} \"q\" \\ /", "日本語 \u{1F600}", "", " spaced ", "line\nbreak", "\u{1}ctl"]) + String(random.below(50))
        case .double: return Double(random.below(2_000_000)) / 64 - 10_000
        case .bool: return random.below(2) == 0
        case .date: return random.pick(["2024-03-05T12:34:56Z", "2023-02-07T19:12:28.123+01:00", "1970-01-01", "19710101T041400Z", "1000-06-15T12:00:00Z"])
        case .list: return (0..<random.below(3)).map { _ in random.below(100) }
        }
    }

    /// A feed whose first `clean` records fit the fields' kinds (what inference samples)
    /// and whose later ones sometimes do not (rejects).
    static func feed(seed: UInt64, records: Int, clean: Int) -> (bytes: [UInt8], sample: Int) {
        var random = Random(seed: seed)
        var fields: [(String, Kind)] = []
        for name in names.shuffled(using: &random).prefix(4 + random.below(6)) where !fields.contains(where: { $0.0 == name }) {
            fields.append((name, Kind.allCases[random.below(Kind.allCases.count)]))
        }
        let nestedName = random.pick(["owner", "2020", "who.is", "[o]", "ø"])
        let flatName = random.pick(["geo", "1", "g.h", "g[0]"])
        var owners: [Int: [String: Any]] = [:]
        var lines: [String] = []
        for index in 0..<records {
            var record: [String: Any] = ["id": "r\(random.below(records * 3 / 4))"]
            let wrong = index >= clean && random.below(8) == 0
            for (name, kind) in fields where random.below(6) != 0 {
                record[name] = value(kind, &random, wrong: wrong && random.below(2) == 0)
            }
            if random.below(4) != 0 {
                // An owner is the same object wherever its id comes (a key, not a per-record id).
                let id = random.below(20)
                let owner = owners[id] ?? ["id": id, "name": "owner \(id)", "0": random.below(5)]
                owners[id] = owner
                // After the sample, sometimes by its key alone (found or made by it).
                record[nestedName] = index >= clean && random.below(5) == 0 ? id as Any : owner
            }
            if random.below(3) != 0 { record[flatName] = ["lat": Double(random.below(1000)) / 8, "note": "n\(random.below(4))"] }
            let data = try! JSONSerialization.data(withJSONObject: record, options: [.sortedKeys, .fragmentsAllowed])
            lines.append(String(decoding: data, as: UTF8.self))
        }
        return (Array(("[\n" + lines.joined(separator: ",\n") + "\n]\n").utf8), clean)
    }

    @Test(arguments: 0..<8)
    func randomRecordsGiveTheSameStoreAndRejectsOnBothPaths(seed: Int) throws {
        let dir = try TemporaryDirectory()
        let (bytes, sample) = Self.feed(seed: UInt64(seed) * 7919 + 1, records: 400, clean: 150)
        let path = try dir.write("records.json", bytes)
        let inference = try PipelineInference.infer(feed: path, options: .init(sample: sample))
        var reports: [ImportReport] = []
        for objectPath in [false, true] {
            var options = Importer.Options(feed: path, store: dir.file(objectPath ? "objects.sqlite" : "batch.sqlite"), workers: 2,
                                           saveEvery: 37, chunkSize: 90)
            options.objectPath = objectPath
            reports.append(try Importer(spec: inference.spec, options: options).run())
        }
        #expect(reports[0].writePath == "batch", "the inferred pipeline takes the batch path: \(inference.text)")
        #expect(reports[1].writePath == "objects")
        #expect(reports[0].counts == reports[1].counts)
        #expect(reports[0].imported + reports[0].rejectedThisRun == 400)
        // The feed exercises what it is for: rejects, and a related entity beside the records'.
        #expect(reports[0].rejectedThisRun > 0 && reports[0].counts.count >= 2, "\(reports[0].counts), \(reports[0].rejectedThisRun) rejected")
        let batch = try PostgresImportTests.sqliteRows(dir.file("batch.sqlite"), inference.spec.model)
        let objects = try PostgresImportTests.sqliteRows(dir.file("objects.sqlite"), inference.spec.model)
        for (entity, rows) in batch {
            let other = objects[entity] ?? []
            #expect(rows == other, "\(entity): first difference \(zip(rows, other).first { $0 != $1 }.map { "\($0)\n vs \($1)" } ?? "in count")\n\(inference.text)")
        }
        let rejects = try reports.map { try String(contentsOfFile: $0.rejectsFile, encoding: .utf8) }
        #expect(rejects[0] == rejects[1])
    }
}

extension SplitMix64 {
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
