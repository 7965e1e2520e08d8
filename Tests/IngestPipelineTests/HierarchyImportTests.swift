import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A feed of mixed events imported into a hierarchy (Event → PushEvent, IssueEvent): the
/// pipeline's discriminator maps each record to its subentity; one table holds them all.
@Suite(.serialized) struct HierarchyImportTests {
    typealias Backend = HistoryImportTests.Backend
    static let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/event-hierarchy.json").path
    static let feed = PipelineSpecTests.root.appendingPathComponent("Fixtures/feeds/events-typed.ndjson").path

    static func importFeed(_ feed: String, into store: HistoryImportTests.Store) throws -> IngestBinary.Outcome {
        try IngestBinary.run(["import", feed, "--pipeline", pipeline, "--store", store.target, "--quiet"])
    }

    @Test(arguments: Backend.available) func recordsBecomeTheirSubentitiesAndAParentFetchReturnsThemAll(backend: Backend) throws {
        let store = try HistoryImportTests.Store(backend)
        let first = try Self.importFeed(Self.feed, into: store)
        #expect(first.status == 0, "\(first.stderr)")
        // Again: every record meets its own object, unchanged.
        let again = try IngestBinary.run(["import", Self.feed, "--pipeline", Self.pipeline, "--store", store.target])
        #expect(again.status == 0, "\(again.stderr)")
        #expect((again.stdout + again.stderr).contains("records: 0 inserted, 0 updated, 5 unchanged"), "\(again.stdout) \(again.stderr)")
        let check = try IngestBinary.run(["status", store.target, "--check"])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let coordinator = try store.open()
        let context = ObjectContext(coordinator: coordinator, name: "reader")
        try context.performAndWait {
            let events = try context.fetch(FetchRequest("Event", sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(events.map { "\($0.entityName) \($0.id!.stringValue!)" }
                == ["PushEvent 1", "IssueEvent 2", "Event 3", "PushEvent 4", "Event 5"])
            #expect(events[0].ref == "refs/heads/main" && events[0].commits == .int(3))
            #expect(events[1].title == "Bug" && events[2].type == "WatchEvent" && events[4].type == "unknown")
            let ann = try #require(try context.fetch("Actor", where: "login", equals: "ann").first)
            #expect(ann.objects(forKey: "events").map { $0.id!.stringValue! }.sorted() == ["1", "3"])
            #expect(try context.count("PushEvent") == 2 && context.count("Event") == 5)
        }
    }

    @Test(arguments: Backend.available) func aRecordWhoseKeyAnotherEntityHoldsIsRejectedWithTheReason(backend: Backend) throws {
        let store = try HistoryImportTests.Store(backend)
        #expect(try Self.importFeed(Self.feed, into: store).status == 0)
        let cross = store.directory.file("cross.ndjson")
        try """
            {"id": "1", "type": "IssuesEvent", "actor": {"id": 1}, "payload": {"action": "closed", "issue": {"number": 9, "title": "X"}}}
            {"id": "6", "type": "IssuesEvent", "actor": {"id": 1}, "payload": {"action": "closed", "issue": {"number": 9, "title": "Y"}}}

            """.write(toFile: cross, atomically: true, encoding: .utf8)
        let outcome = try Self.importFeed(cross, into: store)
        let coordinator = try store.open()
        let context = ObjectContext(coordinator: coordinator, name: "reader")
        let row = try context.performAndWait {
            let events = try context.fetch(FetchRequest("Event", sortDescriptors: [FetchSortDescriptor("id")]))
            #expect(events.map { "\($0.entityName) \($0.id!.stringValue!)" }
                == ["PushEvent 1", "IssueEvent 2", "Event 3", "PushEvent 4", "Event 5", "IssueEvent 6"])
            #expect(events[0].ref == "refs/heads/main")
            return events[0].objectID.primaryKey!
        }
        let rejects = store.server == nil
            ? try String(contentsOfFile: store.target + ".rejects.ndjson", encoding: .utf8)
            : try IngestBinary.run(["status", store.target]).stdout
        #expect(rejects.contains(#"IssueEvent \"1\" has id = \"1\", as the stored PushEvent row \#(row) does; no merge policy makes one entity's object another's"#),
                "\(rejects) \(outcome.stderr)")
    }
}
