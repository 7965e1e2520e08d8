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

/// A to-many given as an object keyed by codes (`"languages": {"por": "Portuguese"}`,
/// `"currencies": {"EUR": {"name": "Euro"}}`) with `"keyed": true`: one related object
/// per member, its name under `@key`, a plain value under `@value`.
@Suite struct KeyedMapRelationshipTests {
    static let pipeline = """
        { "model": { "entities": [
            { "name": "Country", "attributes": [ { "name": "code", "type": "string", "optional": false } ],
              "relationships": [ { "name": "languages", "destination": "Language", "inverse": "countries", "toMany": true },
                                 { "name": "currencies", "destination": "Currency", "inverse": "countries", "toMany": true } ],
              "unique": [["code"]] },
            { "name": "Language", "attributes": [ { "name": "code", "type": "string", "optional": false }, { "name": "name", "type": "string" } ],
              "relationships": [ { "name": "countries", "destination": "Country", "inverse": "languages", "toMany": true } ], "unique": [["code"]] },
            { "name": "Currency", "attributes": [ { "name": "code", "type": "string", "optional": false }, { "name": "name", "type": "string" },
                                                  { "name": "symbol", "type": "string" } ],
              "relationships": [ { "name": "countries", "destination": "Country", "inverse": "currencies", "toMany": true } ], "unique": [["code"]] } ] },
          "feed": { "ndjson": true }, "record": "Country",
          "mappings": {
            "Country": { "attributes": { "code": "cca3" },
                         "relationships": { "languages": { "from": "languages", "keyed": true },
                                            "currencies": { "from": "currencies", "keyed": true } } },
            "Language": { "attributes": { "code": "@key", "name": "@value" } },
            "Currency": { "attributes": { "code": "@key", "name": "name", "symbol": "symbol" } } } }
        """

    @Test func eachMemberOfAKeyedMapIsARelatedObject() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.ndjson", Array("""
            {"cca3":"PRT","languages":{"por":"Portuguese"},"currencies":{"EUR":{"name":"Euro","symbol":"€"}}}
            {"cca3":"CHE","languages":{"fra":"French","gsw":"Swiss German","ita":"Italian","roh":"Romansh"},"currencies":{"CHF":{"name":"Swiss franc","symbol":"Fr."}}}
            {"cca3":"FRA","languages":{"fra":"French"},"currencies":{"EUR":{"name":"Euro","symbol":"€"}}}

            """.utf8))
        _ = try Importer(spec: try PipelineSpec.parse(Array(Self.pipeline.utf8)), options: Importer.Options(feed: feed, store: dir.file("store.sqlite"))).run()
        let store = dir.file("store.sqlite")
        #expect(try storeRows(store, "SELECT code, name FROM Language ORDER BY code")
                == ["fra|French", "gsw|Swiss German", "ita|Italian", "por|Portuguese", "roh|Romansh"])
        #expect(try storeRows(store, "SELECT code, name, symbol FROM Currency ORDER BY code") == ["CHF|Swiss franc|Fr.", "EUR|Euro|€"])
        #expect(try storeRows(store, """
            SELECT c.code, group_concat(l.code, ',') FROM Country c JOIN "_join_Country.languages" j ON j._a = c._pk
            JOIN Language l ON l._pk = j._b GROUP BY c.code ORDER BY c.code
            """) == ["CHE|fra,gsw,ita,roh", "FRA|fra", "PRT|por"])
    }

    @Test func keyedIsForToManyRelationships() throws {
        let toOne = Self.pipeline.replacingOccurrences(of: #""name": "languages", "destination": "Language", "inverse": "countries", "toMany": true"#,
                                                       with: #""name": "languages", "destination": "Language", "inverse": "countries""#)
        #expect(throws: (any Error).self) { try PipelineSpec.parse(Array(toOne.utf8)) }
    }
}
