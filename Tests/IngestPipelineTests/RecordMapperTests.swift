import Foundation
import IngestJSON
import IngestStore
import Testing
@testable import IngestPipeline

@Suite struct RecordMapperTests {
    static let spec: PipelineSpec = {
        let path = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path
        return try! PipelineSpec.load(path: path)
    }()

    func map(_ json: String) throws -> MappedObject {
        try RecordMapper(spec: Self.spec).map(try JSONValue.parse(json))
    }

    func reject(_ json: String) -> String? {
        do {
            _ = try map(json)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func generatedRecordsMapCompletely() throws {
        let records = try readAll(FeedGenerator(records: 200).bytes())
        let mapper = RecordMapper(spec: Self.spec)
        var stringViews = 0
        for record in records {
            let object = try mapper.map(record)
            #expect(object.entity == "Photo")
            #expect(object.values["views"]??.intValue != nil)
            if case .string? = record["views"] { stringViews += 1 }
            #expect(object.values["uploadDate"]??.dateValue != nil)
            let photographer = try #require(object.related["whoTook"]?.first)
            #expect(photographer.entity == "Photographer" && photographer.key.count == 1)
            #expect(photographer.values["name"]??.stringValue != nil)
            if case .string(let tags)?? = object.values["tags"] { #expect(tags.hasPrefix("[")) }
        }
        #expect(stringViews > 0, "the generator gives some views as numeric strings")
    }

    @Test func aRecordMapsToTheExpectedValues() throws {
        let object = try map(#"{"id": 42, "title": "Harbour", "views": "17", "uploadDate": 1709640000, "latitude": "38.7", "tags": ["a", "b"], "photographer": "p7", "unknown": {"ignored": true}}"#)
        #expect(object.values["id"] == .string("42"))
        #expect(object.values["views"] == .int(17))
        #expect(object.values["uploadDate"] == .date(Date(timeIntervalSince1970: 1_709_640_000)))
        #expect(object.values["latitude"] == .double(38.7))
        #expect(object.values["tags"] == .string(#"["a","b"]"#))
        #expect(object.values["subtitle"] == .some(nil))
        #expect(object.key == [.string("42")])
        #expect(object.related["whoTook"] == [MappedObject(entity: "Photographer", values: ["id": .string("p7")], key: [.string("p7")], related: [:])])
        #expect(try map(#"{"id": "x", "views": null}"#).values["views"] == .int(0), "null takes the default")
    }

    /// Ten kinds of bad record, each with its exact reason.
    @Test(arguments: [
        (#"[1, 2]"#, "the record is an array, not an object"),
        (#"{"title": "no id"}"#, "id: missing required value (from 'id')"),
        (#"{"id": "a", "views": 12.5}"#, "views: 12.5 is not an integer"),
        (#"{"id": "a", "views": "lots"}"#, "views: \"lots\" is not an integer"),
        (#"{"id": "a", "views": 99999999999999999999}"#, "views: 99999999999999999999 is out of range for int64"),
        (#"{"id": "a", "uploadDate": "last tuesday"}"#, "uploadDate: \"last tuesday\" is not a date (expected ISO 8601 or Unix seconds)"),
        (#"{"id": "a", "latitude": {"deg": 38}}"#, "latitude: expected a number, found an object"),
        (#"{"id": "a", "photographer": {"name": "nobody"}}"#, "whoTook.id: missing required value (from 'id')"),
        (#"{"id": "a", "photographer": [1, 2]}"#, "whoTook: a list, but Photo.whoTook is to-one"),
        (#"{"id": "a", "photographer": {"id": ["p1"]}}"#, "whoTook.id: expected a string, found an array"),
    ])
    func badRecordsAreRejectedWithTheirReason(_ json: String, _ reason: String) {
        #expect(reject(json) == reason)
    }

    private func readAll(_ bytes: [UInt8]) throws -> [JSONValue] {
        var records: [JSONValue] = []
        try FeedReader(source: MemoryByteSource(bytes), name: "test").read { records.append(try JSONValue.parse($0.bytes)) }
        return records
    }
}
