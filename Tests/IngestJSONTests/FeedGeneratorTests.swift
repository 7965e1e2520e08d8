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
