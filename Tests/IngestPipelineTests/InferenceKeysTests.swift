import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Keys of records without an id (issue 40, item 8): a second import without a pipeline
/// of an updated copy doubled the rows (universities: 10,251 → 20,502). A record is keyed
/// by an identity-like member unique in the sample, by MongoDB's `_id.$oid`, or by a
/// naming member and another unique together; each candidate turned down is named, with why.
@Suite struct InferenceKeysTests {
    /// Universities as the Hipo list gives them (its member order), the first five sharing
    /// a name, each in its own country; the record at `changed` has a new web page.
    static func universities(_ count: Int, changed: Int? = nil) -> [UInt8] {
        let countries = [("United States", "US"), ("Canada", "CA"), ("France", "FR"), ("Portugal", "PT"), ("Japan", "JP")]
        let records = (0..<count).map { i in
            let (country, code) = countries[i % countries.count]
            let name = i < 5 ? "Saint Mary's College" : "University \(i)"
            let page = i == changed ? "https://www.u\(i).example/" : "https://u\(i).example/"
            return #"{"web_pages": ["\#(page)"], "name": "\#(name)", "alpha_two_code": "\#(code)", "state-province": null, "domains": ["u\#(i).example"], "country": "\#(country)"}"#
        }
        return Array(("[" + records.joined(separator: ",\n") + "]").utf8)
    }

    @Test func anUpdatedUniversitiesFeedImportedWithoutAPipelineUpdatesItsRecordsRatherThanAddingThem() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("world_universities.json", Self.universities(120))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.spec.model.entity("WorldUniversity")?.uniquenessConstraints == [["name", "alpha_two_code"]])
        #expect(inference.report.contains(#"WorldUniversity: 120 records sampled; unique by 'name' and 'alpha_two_code' together (each in every one, and no two of the 120 records share both; 'name' alone is no key: 5 records share "Saint Mary's College"; a key of two members, so the import takes the object path, not the batch path)"#),
                "\(inference.report)")
        let store = dir.file("s.sqlite")
        let first = try IngestBinary.run(["import", feed, "--store", store, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let updated = try dir.write("world_universities-2.json", Self.universities(120, changed: 7))
        let second = try IngestBinary.run(["import", updated, "--store", store])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("  records: 0 inserted, 1 updated, 119 unchanged\n"), "\(second.stdout)")
        #expect(try storeRows(store, "SELECT count(*) FROM WorldUniversity") == ["120"])
        #expect(try storeRows(store, "SELECT web_pages FROM WorldUniversity WHERE name = 'University 7'") == [#"["https://www.u7.example/"]"#])
    }

    /// The key of two members on PostgreSQL, whose object path writes it there too.
    @Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func onPostgreSQLAnUpdatedUniversitiesFeedUpdatesItsRecordsToo() throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try IngestBinary.run(["import", try dir.write("world_universities.json", Self.universities(120)), "--store", server.url, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let updated = try dir.write("world_universities-2.json", Self.universities(120, changed: 7))
        let second = try IngestBinary.run(["import", updated, "--store", server.url])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("  records: 0 inserted, 1 updated, 119 unchanged\n"), "\(second.stdout)")
        let model = try #require(PostgresImport.latestPipeline(url: try PostgresURL(server.url))).text
        let rows = try PostgresImportTests.postgresRows(server.url, try PipelineSpec.parse(Array(model.utf8)).model)["WorldUniversity"] ?? []
        #expect(rows.count == 120)
        #expect(rows.filter { $0.contains("University 7|") } == [#"["https://www.u7.example/"]|University 7|FR|NULL|["u7.example"]|France"#])
    }

    /// Found by probing the rule: a name with its country unique in three records says
    /// nothing of the next feed, and keying by it would merge two universities later.
    @Test func aNameUniqueWithAnotherMemberInAFewRecordsIsNoKeyAndSaysWhy() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("universities.json", Self.universities(3))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.spec.model.entity("University")?.uniquenessConstraints == [])
        #expect(inference.report.contains(#"University: 3 records sampled; no key ('name' and 'alpha_two_code' are not a key together: no two of the 3 records share both, but a key of two members is taken from 100 records sampled on (pass a larger --sample, or add "unique" to the pipeline)), so no uniqueness: every record is a new object. Importing the same feed again is skipped, but another feed that repeats these records adds them again"#),
                "\(inference.report)")
    }

    /// Every pair of the naming member with a member beside it is tried, and each turned down says why.
    @Test func aNamingMemberRepeatedWithEveryOtherIsNoKeyAndEachPairSaysWhy() throws {
        let dir = try TemporaryDirectory()
        let records = (0..<100).map { i in #"{"title": "T\#(i % 50)", "lang": "en", "year": \#(i % 50), "n": \#(i == 99 ? "null" : "\(i)")}"# }
        let feed = try dir.write("songs.ndjson", Array(records.joined(separator: "\n").utf8))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains(#"Song: 100 records sampled; no key ('title' and another member are not a key together: with 'lang', 2 records share "T0" and "en"; with 'year', 2 records share "T0" and 0; with 'n', it is null in 1 of the 100 records), so no uniqueness: every record is a new object. Importing the same feed again is skipped, but another feed that repeats these records adds them again"#),
                "\(inference.report)")
    }

    @Test func anIdentityLikeMemberUniqueInTheSampleIsTheKeyAndThoseBeforeItSayWhyNot() throws {
        let dir = try TemporaryDirectory()
        func papers(_ title: String) -> [UInt8] {
            Array("""
                {"doi": "10.1/a", "url": "https://example.org/a", "email": "ada@example.org", "title": "\(title)"}
                {"url": "https://example.org/a", "email": "bob@example.org", "title": "B"}
                {"doi": "10.1/c", "url": "https://example.org/c", "email": "cy@example.org", "title": "C"}

                """.utf8)
        }
        let feed = try dir.write("papers.ndjson", papers("A"))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains(#"Paper: 3 records sampled; unique by 'email' (named like an identity, present in every one, and no two of the 3 records share a value); 'doi' is not a key: it is missing from 1 of the 3 records; 'url' is not a key: 2 records share "https://example.org/a""#),
                "\(inference.report)")
        #expect(inference.spec.model.entity("Paper")?.uniquenessConstraints == [["email"]])
        let store = dir.file("s.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--store", store, "--quiet"]).status == 0)
        let again = try IngestBinary.run(["import", try dir.write("papers-2.ndjson", papers("A, revised")), "--store", store, "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try storeRows(store, "SELECT email, title FROM Paper ORDER BY email") == ["ada@example.org|A, revised", "bob@example.org|B", "cy@example.org|C"])
    }

    /// A MongoDB export (`mongoexport`): `_id` is an object around the ObjectId's string.
    @Test func aMongoDBExportIsKeyedByTheStringInsideItsObjectID() throws {
        let dir = try TemporaryDirectory()
        func customers(_ name: String) -> [UInt8] {
            Array("""
                {"_id": {"$oid": "5ca4bbcea2dd94ee58162a68"}, "username": "fmiller", "name": "\(name)"}
                {"_id": {"$oid": "5ca4bbcea2dd94ee58162a69"}, "username": "valenciajennifer", "name": "Lindsay Cowan"}

                """.utf8)
        }
        let feed = try dir.write("customers.ndjson", customers("Elizabeth Ray"))
        let inference = try PipelineInference.infer(feed: feed)
        #expect(inference.report.contains("Customer: 2 records sampled; unique by '_id.$oid' (MongoDB's ObjectId, present in every one)"), "\(inference.report)")
        #expect(inference.report.contains(#"Customer._id.$oid: string (2 MongoDB ObjectIds, {"$oid": …}) → id"#), "\(inference.report)")
        #expect(inference.spec.mappings["Customer"]?.attributes.first { $0.attribute == "id" }?.from.description == "_id.$oid")
        let store = dir.file("s.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--store", store, "--quiet"]).status == 0)
        let again = try IngestBinary.run(["import", try dir.write("customers-2.ndjson", customers("Elizabeth Ray-Miller")), "--store", store, "--quiet"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try storeRows(store, "SELECT id, name FROM Customer ORDER BY id")
                == ["5ca4bbcea2dd94ee58162a68|Elizabeth Ray-Miller", "5ca4bbcea2dd94ee58162a69|Lindsay Cowan"])
        // An ObjectId missing from a record is no key, said under its path; the username is.
        let partial = try dir.write("accounts.ndjson", Array("""
            {"_id": {"$oid": "5ca4bbcea2dd94ee58162a68"}, "username": "fmiller"}
            {"username": "hillrachel"}
            """.utf8))
        #expect(try PipelineInference.infer(feed: partial).report.contains(
            "Account: 2 records sampled; unique by 'username' (named like an identity, present in every one, and no two of the 2 records share a value); '_id.$oid' is not a key: it is missing from 1 of the 2 records"))
    }
}
