import Foundation
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// A PostgreSQL writer takes the keys of entities no other links to (a feed's records) as
/// new until one is found stored, and learns otherwise from the insert's unique violation.
/// A record rejected on that assumption never reaches the insert: it must be checked.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresAssumedNewKeysTests {
    /// A stored post given again under `keepExisting` is kept, and its event (given by key
    /// alone, its name required) is not made: nothing is rejected. Taken as new, the post
    /// needed the event, and the record was rejected with "Event 1: name is required" (found
    /// in `FeedOrderPropertyTests`: a run continued after a kill, whose save held only such
    /// records, ended with rejects a one-worker import did not have).
    @Test(arguments: [1, 2])
    func aStoredRecordRejectedOnlyIfNewIsLookedUpBeforeItIsRejected(saveEvery: Int) throws {
        let server = try PostgresServer.database()
        let dir = try TemporaryDirectory()
        let first = try dir.write("first.ndjson", Array("""
            {"id":"p1","title":"kept","author":{"id":1,"name":"Ann"}}
            {"id":"p2","title":"kept too"}

            """.utf8))
        let second = try dir.write("second.ndjson", Array("""
            {"id":"p1","eventId":1}
            {"id":"p2","title":"not written","eventId":2}
            {"id":"p3","eventId":3}

            """.utf8))
        let stores = try PostgresImportTests.importBoth([first, second], pipeline: UpdateRuleTests.pipelineText(postRule: "keepExisting"),
                                                        url: server.url, dir: dir, saveEvery: saveEvery, chunkSize: 4)
        #expect(stores.postgres == stores.sqlite)
        #expect(stores.postgres["Post"]?.count == 2 && stores.postgres["Event"] == [])
        // p3 is new: its event has no name, so it is rejected on both stores; p1 and p2 are kept.
        #expect(stores.joins.map(\.rejected) == [0, 1], "\(stores.joins.map(\.rejected))")
        let rejects = try PostgresConnection(try PostgresURL(server.url)).execute("SELECT record FROM _ingest_rejects WHERE run = 2")
        #expect(rejects.count == 1 && (rejects[0, 0] ?? "").contains("Event 3"), "\((0..<rejects.count).map { rejects[$0, 0] ?? "" })")
    }
}
