import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// The pipeline's path syntax: array elements, keys with any character, and paths that
/// can never match refused when the pipeline is loaded.
@Suite struct JSONPathTests {
    @Test(arguments: [
        ("a.b.c", [JSONPath.Step.key("a"), .key("b"), .key("c")]),
        ("geometry.coordinates[1]", [.key("geometry"), .key("coordinates"), .index(1)]),
        ("items[-1].name", [.key("items"), .index(-1), .key("name")]),
        (#"properties["name.en"]"#, [.key("properties"), .key("name.en")]),
        ("['a key with spaces'].x", [.key("a key with spaces"), .key("x")]),
        (#"["say \"hi\" \u00e9"]"#, [.key("say \"hi\" é")]),
        ("matrix[0][2]", [.key("matrix"), .index(0), .index(2)]),
    ])
    func pathsParse(_ text: String, _ steps: [JSONPath.Step]) throws {
        #expect(try JSONPath(parsing: text).steps == steps)
    }

    @Test(arguments: [
        ("", "the path is empty"), ("a..b", "a key is missing around '.'"), ("a.", "a key is missing around '.'"),
        ("a[1", "expected ']'"), ("a[x]", "expected an array index or a quoted key after '['"), ("a]", "']' without '['"),
        ("a['b", "the quoted key is not closed"), ("a[0]b", "expected '.' or '[' after ']'"),
    ])
    func badPathsSayWhatIsWrong(_ text: String, _ message: String) {
        let error = #expect(throws: JSONPathError.self) { try JSONPath(parsing: text) }
        #expect(error?.message == message, "\(text): \(error?.message ?? "")")
    }

    static func spec(_ attributes: String, relationships: String = "") throws -> PipelineSpec {
        try PipelineSpec.parse(Array("""
        { "model": { "entities": [
            { "name": "Place", "attributes": [ { "name": "id", "type": "string", "optional": false },
                { "name": "lon", "type": "double" }, { "name": "lat", "type": "double" }, { "name": "street", "type": "string" },
                { "name": "english", "type": "string" }, { "name": "last", "type": "string" } ],
              "unique": [["id"]] } ] },
          "feed": { "recordsAt": "features" }, "record": "Place",
          "mappings": { "Place": { "attributes": { \(attributes) } } } }
        """.utf8))
    }

    @Test func aPathThatCanNeverMatchIsAnErrorWhenThePipelineIsLoaded() throws {
        let error = #expect(throws: PipelineError.self) {
            try Self.spec(#""id": "id", "lon": "geometry[0]", "lat": "geometry.lat""#)
        }
        #expect(error?.message == "pipeline.mappings.Place: 'geometry[0]' reads geometry as an array and 'geometry.lat' as an object; no record can match both")
        let syntax = #expect(throws: PipelineError.self) { try Self.spec(#""id": "id", "lon": "geometry[0""#) }
        #expect(syntax?.message == "pipeline.mappings.Place.attributes.lon: 'geometry[0', column 11: expected ']'")
    }

    @Test(arguments: [false, true])
    func arrayElementsAndKeysWithAnyCharacterAreReached(objectPath: Bool) throws {
        let spec = try Self.spec(#"""
            "id": "id", "lon": "geometry.coordinates[0]", "lat": "geometry.coordinates.1",
            "street": "properties[\"addr:street\"]", "english": "properties[\"name.en\"]", "last": "properties.names[-1]"
            """#)
        let dir = try TemporaryDirectory()
        let feed = try dir.write("places.geojson", Array("""
            {"type": "FeatureCollection", "features": [
              {"id": "p1", "geometry": {"type": "Point", "coordinates": [-9.14, 38.71]},
               "properties": {"addr:street": "Rua Augusta", "name.en": "Augusta Street", "names": ["a", "b", "c"]}},
              {"id": "p2", "geometry": {"type": "Point", "coordinates": [2.35]}, "properties": {"names": []}},
              {"id": "p3", "geometry": null, "properties": {"name.en": "only a name", "names": "not a list"}}
            ]}
            """.utf8))
        var options = Importer.Options(feed: feed, store: dir.file("store.sqlite"))
        options.objectPath = objectPath
        let report = try Importer(spec: spec, options: options).run()
        #expect(report.imported == 3 && report.rejected == 0)
        let rows = try storeRows(dir.file("store.sqlite"), "SELECT id, lon, lat, street, english, last FROM Place ORDER BY id")
        #expect(rows == ["p1|-9.14|38.71|Rua Augusta|Augusta Street|c", "p2|2.35|NULL|NULL|NULL|NULL", "p3|NULL|NULL|NULL|only a name|NULL"])
    }
}
