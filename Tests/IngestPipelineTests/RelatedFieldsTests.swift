import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A related object made of members beside the relationship's rather than nested:
/// `{"country": "Portugal", "alpha_two_code": "PT"}` becomes a Country named Portugal
/// with code PT, through `"fields"` in the relationship's mapping.
@Suite struct RelatedFieldsTests {
    static let pipeline = """
        { "model": { "entities": [
            { "name": "University", "attributes": [ { "name": "name", "type": "string", "optional": false } ],
              "relationships": [ { "name": "country", "destination": "Country", "inverse": "universities" } ], "unique": [["name"]] },
            { "name": "Country", "attributes": [ { "name": "code", "type": "string", "optional": false }, { "name": "name", "type": "string" } ],
              "relationships": [ { "name": "universities", "destination": "University", "inverse": "country", "toMany": true } ],
              "unique": [["code"]] } ] },
          "feed": { "ndjson": true }, "record": "University",
          "mappings": {
            "University": { "attributes": { "name": "name" },
                            "relationships": { "country": { "fields": { "name": "country", "code": "alpha_two_code" } } } },
            "Country": { "attributes": { "code": "code", "name": "name" } } } }
        """

    static let feed = """
        {"name":"Universidade de Lisboa","country":"Portugal","alpha_two_code":"PT"}
        {"name":"Universidade do Porto","country":"Portugal","alpha_two_code":"PT"}
        {"name":"Sorbonne","country":"France","alpha_two_code":"FR"}
        {"name":"Nowhere College"}
        {"name":"Codeless","country":"Atlantis"}

        """

    @Test func siblingMembersMakeTheRelatedObject() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array(Self.feed.utf8))
        let report = try Importer(spec: try PipelineSpec.parse(Array(Self.pipeline.utf8)),
                                  options: Importer.Options(feed: feed, store: dir.file("store.sqlite"))).run()
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT code, name FROM Country ORDER BY code") == ["FR|France", "PT|Portugal"])
        #expect(try storeRows(dir.file("store.sqlite"),
                              "SELECT u.name, c.code FROM University u LEFT JOIN Country c ON c._pk = u._country ORDER BY u.name")
                == ["Nowhere College|NULL", "Sorbonne|FR", "Universidade de Lisboa|PT", "Universidade do Porto|PT"])
        let reasons = try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n").map { line in
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any])["reason"] as! String
        }
        #expect(reasons == ["country.code: missing required value (from 'code') (Country made of the record's members: name ← country, code ← alpha_two_code)"])
    }

    @Test func fieldsAreRefusedForAToManyAndMustNameMembers() throws {
        let toMany = Self.pipeline.replacingOccurrences(of: #""relationships": { "country": { "fields""#, with: #""relationships": { "country": { "fieldz""#)
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(toMany.utf8)) }
        let empty = Self.pipeline.replacingOccurrences(of: #"{ "name": "country", "code": "alpha_two_code" }"#, with: "{}")
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(empty.utf8)) }
    }
}
