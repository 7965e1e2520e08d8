import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Maps inside records (issue 40, item 7): a member that is an object keyed by codes or
/// ids (`"languages": {"por": "Portuguese"}`) became one column per key (857 for the
/// countries feed). Inference reads it as a to-many with `"keyed": true`.
@Suite struct InferenceMapsTests {
    /// Countries as restcountries gives them, cut down; Portugal speaks Mirandese too when
    /// `mirandese`. A country's native names are its own (French in France is not French in
    /// Switzerland): a map, but no entity.
    static func countries(mirandese: Bool = false) -> [UInt8] {
        let portuguese = mirandese ? #"{"por": "Portuguese", "mwl": "Mirandese"}"# : #"{"por": "Portuguese"}"#
        return Array("""
            {"name": {"common": "Portugal", "official": "Portuguese Republic", "nativeName": {"por": {"official": "República portuguesa", "common": "Portugal"}}}, "cca3": "PRT", "languages": \(portuguese), "currencies": {"EUR": {"name": "Euro", "symbol": "€"}}}
            {"name": {"common": "Switzerland", "official": "Swiss Confederation", "nativeName": {"fra": {"official": "Confédération suisse", "common": "Suisse"}, "gsw": {"official": "Schweizerische Eidgenossenschaft", "common": "Schweiz"}}}, "cca3": "CHE", "languages": {"fra": "French", "gsw": "Swiss German", "ita": "Italian", "roh": "Romansh"}, "currencies": {"CHF": {"name": "Swiss franc", "symbol": "Fr."}}}
            {"name": {"common": "France", "official": "French Republic", "nativeName": {"fra": {"official": "République française", "common": "France"}}}, "cca3": "FRA", "languages": {"fra": "French"}, "currencies": {"EUR": {"name": "Euro", "symbol": "€"}}}
            {"name": {"common": "United States", "official": "United States of America", "nativeName": {"eng": {"official": "United States of America", "common": "United States"}}}, "cca3": "USA", "languages": {"eng": "English"}, "currencies": {"USD": {"name": "United States dollar", "symbol": "$"}}}

            """.utf8)
    }

    /// Each country's related codes, in order: the join rows as a user reads them.
    static func joined(_ store: String, _ relationship: String, _ destination: String) throws -> [String] {
        try storeRows(store, """
            SELECT cca3, group_concat(code, ',') FROM (SELECT c.cca3 AS cca3, d.code AS code FROM Country c
              JOIN "_join_Country.\(relationship)" j ON j._a = c._pk JOIN \(destination) d ON d._pk = j._b ORDER BY c.cca3, d.code)
            GROUP BY cca3 ORDER BY cca3
            """)
    }

    @Test func mapsKeyedByCodesBecomeToManyRelationshipsAndImportOneObjectPerCode() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("countries.ndjson", Self.countries())
        let inference = try PipelineInference.infer(feed: feed)
        for line in ["Country: 4 records sampled; unique by 'cca3' (named like an identity, present in every one, and no two of the 4 records share a value)",
                     "Country.languages: a map keyed by codes (6 distinct keys in 4 records, values strings): a to-many of Language keyed by @key (its name, as code), its value as value",
                     "Country.currencies: a map keyed by codes (3 distinct keys in 4 records, values objects (name, symbol)): a to-many of Currency keyed by @key (its name, as code)",
                     "Country.name_nativeName: a map keyed by codes (4 distinct keys in 4 records, values objects (official, common)), but '@key' is not a key: 1 of its values came with different contents in different objects (@key fra, say), so it names an object only within its record: one object per key would keep one of them → JSON text in the string attribute name_nativeName"] {
            #expect(inference.report.contains(line), "\(inference.report)")
        }
        let spec = inference.spec
        #expect(spec.model.entities.map(\.name) == ["Country", "Language", "Currency"])
        #expect(spec.model.entity("Language")?.attributes.map(\.name) == ["code", "value"])
        #expect(spec.model.entity("Currency")?.attributes.map(\.name) == ["code", "name", "symbol"])
        #expect(spec.mappings["Country"]?.relationships.map { "\($0.relationship) ← \($0.from) keyed \($0.keyed)" }
                == ["languages ← languages keyed true", "currencies ← currencies keyed true"])
        #expect(spec.mappings["Language"]?.attributes.map { "\($0.attribute) ← \($0.from)" } == ["code ← @key", "value ← @value"])

        let store = dir.file("s.sqlite")
        let first = try IngestBinary.run(["import", feed, "--store", store, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try storeRows(store, "SELECT code, value FROM Language ORDER BY code")
                == ["eng|English", "fra|French", "gsw|Swiss German", "ita|Italian", "por|Portuguese", "roh|Romansh"])
        #expect(try storeRows(store, "SELECT code, name, symbol FROM Currency ORDER BY code")
                == ["CHF|Swiss franc|Fr.", "EUR|Euro|€", "USD|United States dollar|$"])
        #expect(try Self.joined(store, "languages", "Language") == ["CHE|fra,gsw,ita,roh", "FRA|fra", "PRT|por", "USA|eng"])
        #expect(try Self.joined(store, "currencies", "Currency") == ["CHE|CHF", "FRA|EUR", "PRT|EUR", "USA|USD"])
        #expect(try storeRows(store, "SELECT name_common FROM Country ORDER BY cca3") == ["Switzerland", "France", "Portugal", "United States"])
        #expect(try storeRows(store, "SELECT name_nativeName FROM Country WHERE cca3 = 'FRA'") == [#"{"fra":{"official":"République française","common":"France"}}"#])

        // An updated copy: Portugal gains a language; the countries stay four.
        let updated = try IngestBinary.run(["import", try dir.write("countries-2.ndjson", Self.countries(mirandese: true)), "--store", store, "--quiet"])
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(try storeRows(store, "SELECT count(*) FROM Country") == ["4"])
        #expect(try storeRows(store, "SELECT count(*) FROM Language") == ["7"])
        #expect(try Self.joined(store, "languages", "Language") == ["CHE|fra,gsw,ita,roh", "FRA|fra", "PRT|mwl,por", "USA|eng"])
    }

    /// Objects with members of their own are flattened as before: names in every object
    /// (`lat`/`lng` look like codes), or names that vary but are words, not codes.
    @Test func objectsWithMembersOfTheirOwnAreNotTakenForMaps() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("places.ndjson", Array("""
            {"id": 1, "name": {"common": "Lisbon", "official": "Lisboa"}, "latlng": {"lat": 38.7, "lng": -9.1}, "extra": {"colour": "white"}}
            {"id": 2, "name": {"common": "Porto", "official": "Porto"}, "latlng": {"lat": 41.1, "lng": -8.6}, "extra": {"smell": "sea"}}
            {"id": 3, "name": {"common": "Faro", "official": "Faro"}, "latlng": {"lat": 37.0, "lng": -7.9}, "extra": {"weather": "sunny"}}

            """.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        for member in ["name", "latlng", "extra"] {
            #expect(inference.report.contains("Place.\(member): nested objects without an id-like field → flattened into Place as \(member)_…"), "\(inference.report)")
        }
        #expect(inference.spec.model.entities.map(\.name) == ["Place"])
        #expect(inference.spec.model.entity("Place")?.attributes.map(\.name)
                == ["id", "name_common", "name_official", "latlng_lat", "latlng_lng", "extra_colour", "extra_smell", "extra_weather"])
    }

    /// A map whose keys come with other values in other records (points by year) is the
    /// record's own: one object per key would keep one value, so it stays JSON text.
    @Test func aMapWhoseValuesDifferBetweenRecordsIsKeptAsJSONText() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("teams.ndjson", Array("""
            {"id": 1, "points": {"2019": 5}}
            {"id": 2, "points": {"2020": 7}}
            {"id": 3, "points": {"2019": 6, "2021": 1}}
            {"id": 4, "points": {"2022": 3, "2020": 2}}

            """.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains("Team.points: a map keyed by numbers (4 distinct keys in 4 records, values whole numbers), but '@key' is not a key: 2 of its values came with different contents in different objects (@key 2019, say), so it names an object only within its record: one object per key would keep one of them → JSON text in the string attribute points"),
                "\(inference.report)")
        #expect(inference.spec.model.entities.map(\.name) == ["Team"])
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: dir.file("s.sqlite"))).run()
        #expect(report.rejected == 0)
        #expect(try storeRows(dir.file("s.sqlite"), "SELECT points FROM Team ORDER BY id") == [#"{"2019":5}"#, #"{"2020":7}"#, #"{"2019":6,"2021":1}"#, #"{"2022":3,"2020":2}"#])
    }

    @Test(arguments: [
        ("por", "codes"), ("EUR", "codes"), ("en", "codes"), ("pt-BR", "codes"), ("zh_Hant", "codes"), ("2019", "numbers"),
        ("5ca4bbcea2dd94ee58162a68", "ids"), ("0df078f3-3aa7-4a2e-9696-e0520c1a828a", "ids"),
        ("Por", nil), ("name", nil), ("a", nil), ("", nil), ("pt-", nil), ("deadbeefdeadbeef", nil), ("por tuguese", nil),
    ] as [(String, String?)])
    func mapKeysAreCodesNumbersOrIds(_ name: String, _ kind: String?) {
        #expect(PipelineInference.MapKeys(name)?.description == kind)
    }
}
