import Testing
@testable import IngestJSON

@Suite struct FeedGeneratorTests {
    @Test func sameSeedGivesTheSameBytes() throws {
        #expect(FeedGenerator(records: 500, seed: 9).bytes() == FeedGenerator(records: 500, seed: 9).bytes())
        #expect(FeedGenerator(records: 500, seed: 9).bytes() != FeedGenerator(records: 500, seed: 10).bytes())
        #expect(try FeedGenerator(records: 10).bytes() == Fixtures.bytes("photos-10.json"))
        #expect(try FeedGenerator(records: 10, ndjson: true).bytes() == Fixtures.bytes("photos-10.ndjson"))
    }

    @Test func recordsHaveTheDocumentedShape() throws {
        let records = try readRecords(FeedGenerator(records: 2_000).bytes()).map { try JSONValue.parse($0.text) }
        #expect(records.count == 2_000)
        var stringViews = 0
        var photographers: [String: String] = [:]
        for record in records {
            for key in ["id", "title", "subtitle", "photoURL", "thumbnailURL", "uploadDate"] {
                #expect(record[key]?.stringValue != nil, "\(key)")
            }
            #expect(record["latitude"]?.doubleValue.map { abs($0) <= 90 } == true)
            #expect(record["longitude"]?.doubleValue.map { abs($0) <= 180 } == true)
            guard case .array(let tags)? = record["tags"] else { Issue.record("tags"); continue }
            #expect(tags.allSatisfy { $0.stringValue != nil })
            switch record["views"] {
            case .number(let text)?: #expect(Int(text) != nil)
            case .string(let text)?: #expect(Int(text) != nil); stringViews += 1
            default: Issue.record("views")
            }
            let id = try #require(record["photographer"]?["id"]?.stringValue)
            let name = try #require(record["photographer"]?["name"]?.stringValue)
            #expect(photographers[id, default: name] == name, "a photographer keeps one name")
            photographers[id] = name
        }
        #expect((60...140).contains(stringViews), "about 5% of views are strings: \(stringViews)")
        #expect((80...100).contains(photographers.count), "about one photographer per 20 records: \(photographers.count)")
        #expect(Set(records.compactMap { $0["id"]?.stringValue }).count == 2_000)
    }

    @Test func theRealisticFeedHasWhatRealFeedsHave() throws {
        let bytes = FeedGenerator(records: 4_000, style: .realistic).bytes()
        let records = try readRecords(bytes).map { try JSONValue.parse($0.text) }
        #expect(records.count == 4_000)
        var counts: [String: Int] = [:]
        var photographers: [String: String] = [:]
        for record in records {
            func count(_ what: String, _ holds: Bool) { if holds { counts[what, default: 0] += 1 } }
            count("subtitle empty", record["subtitle"]?.stringValue == "")
            count("subtitle null", record["subtitle"] == .null)
            count("subtitle missing", record["subtitle"] == nil)
            count("views string", record["views"]?.stringValue.flatMap { Int($0) } != nil)
            count("views missing or null", record["views"] == nil || record["views"] == .null)
            count("no coordinates", record["latitude"] == nil || record["latitude"] == .null)
            count("title not ASCII", record["title"]?.stringValue?.utf8.contains { $0 >= 0x80 } == true)
            count("title with a quote", record["title"]?.stringValue?.contains("\"") == true)
            count("exif object", record["exif"]?["make"] != nil)
            count("sizes array", { if case .array(let sizes)? = record["sizes"] { !sizes.isEmpty } else { false } }())
            if case .object(let members) = record { count("photographer first", members.dropFirst().first?.key == "photographer") }
            if let id = record["photographer"]?["id"]?.stringValue {
                let name = try #require(record["photographer"]?["name"]?.stringValue)
                #expect(photographers[id, default: name] == name, "a photographer keeps one name")
                photographers[id] = name
            } else {
                count("no photographer", true)
            }
            #expect(record["id"]?.stringValue != nil)
        }
        // Each share within a few points of the documented one (4,000 records).
        func about(_ what: String, _ share: Double) {
            let got = Double(counts[what, default: 0]) / 4_000
            #expect(abs(got - share) <= max(0.012, share * 0.25), "\(what): \(got), documented \(share)")
        }
        about("subtitle empty", 0.40)
        about("subtitle null", 0.10)
        about("subtitle missing", 0.05)
        about("views string", 0.05)
        about("views missing or null", 0.05)
        about("no coordinates", 0.17)
        about("title not ASCII", 0.03)  // 2% raw, 1% as \\u escapes
        about("title with a quote", 0.01)
        about("exif object", 0.40)
        about("sizes array", 0.20)
        about("photographer first", 0.10)
        about("no photographer", 0.02)
        // About one photographer per 20 records, most seen a few times, a few seen often.
        #expect((180...200).contains(photographers.count), "\(photographers.count) photographers")
        // One record in ten from a producer that escapes slashes.
        let text = String(decoding: bytes, as: UTF8.self)
        let escaped = text.ranges(of: #""photoURL":"https:\/\/"#).count
        #expect((300...500).contains(escaped), "\(escaped) records with escaped slashes")
        #expect(FeedGenerator(records: 300, style: .realistic).bytes() != FeedGenerator(records: 300).bytes())
    }

    @Test func datesAreValidISO8601() throws {
        let records = try readRecords(FeedGenerator(records: 300).bytes()).map { try JSONValue.parse($0.text) }
        let pattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$/#
        for record in records {
            let date = try #require(record["uploadDate"]?.stringValue)
            #expect(date.wholeMatch(of: pattern) != nil, "\(date)")
        }
        #expect(FeedGenerator.civilDate(daysSinceEpoch: 0) == (1970, 1, 1))
        #expect(FeedGenerator.civilDate(daysSinceEpoch: 19_782) == (2024, 2, 29))
    }

    @Test func emptyFeedIsAnEmptyArray() throws {
        #expect(String(decoding: FeedGenerator(records: 0).bytes(), as: UTF8.self) == "[\n]\n")
        #expect(try readRecords(FeedGenerator(records: 0).bytes()).isEmpty)
    }
}
