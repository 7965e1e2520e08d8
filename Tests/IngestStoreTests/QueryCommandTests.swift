import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// `ingest query` against a store made by the tests, run as a user would.
@Suite struct QueryCommandTests {
    func ingest(_ arguments: String...) throws -> IngestBinary.Outcome {
        try IngestBinary.run(arguments)
    }

    @Test(arguments: StoreBackend.reopenable) func queryPrintsJSONTableCSVAndCounts(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        // The store's file, or its PostgreSQL URL.
        let store = backend == .sqlite ? directory.file("store.sqlite") : coordinator.path
        let json = try ingest("query", store, "Photo", "--where", "whoTook.id = 'ana' AND views != nil",
                              "--sort", "views:desc", "--fields", "id,views,whoTook.name", "--format", "json")
        #expect(json.status == 0, "\(json.stderr)")
        let decoded = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        #expect(decoded?.map { $0["id"] as? String } == ["p05", "p10", "p00"])
        #expect(decoded?.first?["whoTook.name"] as? String == "Ana Silva")
        #expect(decoded?.first?["views"] as? Int == 84)

        let count = try ingest("query", store, "Photographer", "--where", "photos.@count > 2", "--count")
        #expect(count.stdout == "2\n")

        let csv = try ingest("query", store, "Photo", "--where", "title CONTAINS '\"'", "--fields", "id,title", "--format", "csv")
        #expect(csv.stdout == "id,title\r\np06,\"o'clock \"\"quoted\"\"\"\r\n")

        let table = try ingest("query", store, "Tag", "--sort", "name", "--fields", "name", "--limit", "2")
        #expect(table.stdout.hasSuffix("(2 rows)\n"))
        #expect(table.stdout.contains("| 100%_off |"))
    }

    @Test(arguments: StoreBackend.reopenable) func badQueriesExitOneWithOneReadableLine(backend: StoreBackend) throws {
        let (coordinator, directory) = try PredicateAgreementTests.fixture(backend)
        let store = backend == .sqlite ? directory.file("store.sqlite") : coordinator.path
        let badPredicate = try ingest("query", store, "Photo", "--where", "views >")
        #expect(badPredicate.status == 1)
        #expect(badPredicate.stderr == "ingest: expected a key path or a value, found the end at column 8\n")
        let badEntity = try ingest("query", store, "Nope")
        #expect(badEntity.status == 1)
        #expect(badEntity.stderr.contains("has no entity 'Nope' (it has: Photo, Photographer, Tag, Album, Folder, Everything)"))
        let badKey = try ingest("query", store, "Photo", "--fields", "id,nope")
        #expect(badKey.stderr == "ingest: entity Photo has no key 'nope'\n")
        let noStore = try ingest("query", directory.file("missing.sqlite"), "Photo")
        #expect(noStore.stderr == "ingest: \(directory.file("missing.sqlite")) is not an Ingest store: there is no file there\n")
        if backend == .postgres {
            let empty = try StoreBackend.newDatabase()
            let notAStore = try ingest("query", empty, "Photo")
            #expect(notAStore.status == 1 && notAStore.stderr == "ingest: \(empty) is not an Ingest store: the database has no Ingest tables\n",
                    "\(notAStore.stderr)")
        }
    }

    /// Sort keys and field lists that name nothing are usage errors (an empty sort key
    /// trapped), and a direction must be asc or desc (others sorted ascending without a word).
    @Test func emptySortKeysFieldListsAndUnknownDirectionsAreUsageErrors() throws {
        let cases: [([String], String)] = [
            (["--sort", ""], "--sort '': the key path is empty (expected KEY, KEY:asc or KEY:desc)"),
            (["--sort", ":desc"], "--sort ':desc': the key path is empty (expected KEY, KEY:asc or KEY:desc)"),
            (["--sort", "id:sideways"], "--sort 'id:sideways': 'sideways' is no direction (expected asc or desc)"),
            (["--sort", "id:"], "--sort 'id:': '' is no direction (expected asc or desc)"),
            (["--fields", ""], "--fields names no key path (give them comma-separated: id,title,whoTook.name)"),
            (["--fields", ","], "--fields names no key path (give them comma-separated: id,title,whoTook.name)"),
        ]
        for (options, message) in cases {
            let outcome = try IngestBinary.run(["query", "store.sqlite", "Photo"] + options)
            #expect(outcome.status == 2 && outcome.stderr.contains(message), "\(options): \(outcome.stderr)")
        }
    }
}

