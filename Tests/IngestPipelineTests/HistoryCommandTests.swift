import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing

/// `ingest history`: one change a line, the token to continue from, and clear refusals.
@Suite struct HistoryCommandTests {
    static let photos = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    static func token(_ line: Substring) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return object["token"] as? String
    }

    @Test func printsEachChangeThenTheTokenAndContinuesFromIt() throws {
        let dir = try TemporaryDirectory()
        let feed = dir.file("feed.json")
        try FeedGenerator(records: 500, seed: 9).write(to: feed)
        let store = dir.file("store.sqlite")
        #expect(try IngestBinary.run(["import", feed, "--pipeline", Self.photos, "--store", store, "--save-every", "100", "--quiet"]).status == 0)
        let all = try IngestBinary.run(["history", store])
        #expect(all.status == 0, "\(all.stderr)")
        let lines = all.stdout.split(separator: "\n")
        let photographers = try IngestBinary.run(["query", store, "Photographer", "--count"]).stdout
        #expect(lines.count == 500 + Int(photographers.trimmingCharacters(in: .whitespacesAndNewlines))! + 1)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(Set(first.keys) == ["position", "time", "author", "process", "kind", "entity", "row", "id", "token"])
        #expect(first["author"] as? String == "import run 1 chunk 1" && first["kind"] as? String == "insert")
        let end = try #require(Self.token(lines.last!))
        #expect(lines.last! == "{\"token\":\"\(end)\"}")
        // After the end, only the token; after the first transaction, the rest.
        #expect(try IngestBinary.run(["history", store, "--since", end]).stdout == "{\"token\":\"\(end)\"}\n")
        let afterFirst = try IngestBinary.run(["history", store, "--since", try #require(first["token"] as? String)]).stdout.split(separator: "\n")
        #expect(afterFirst.count < lines.count && afterFirst.last == lines.last)
        // JSON: one document with the same changes.
        let json = try IngestBinary.run(["history", store, "--format", "json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((document["changes"] as? [Any])?.count == lines.count - 1 && document["token"] as? String == end)
        // Purged before the end: the old token is refused, by name.
        #expect(try IngestBinary.run(["history", store, "--purge-before", end]).stdout == "purged the history before \(end)\n")
        let old = try #require(first["token"] as? String)
        let refused = try IngestBinary.run(["history", store, "--since", old])
        #expect(refused.status == 1)
        #expect(refused.stderr == "ingest: history token \(old) is from before the history was purged (it keeps positions from \(HistoryToken(end)!.position) on): "
                + "the changes after it are gone; fetch the objects afresh and continue from the current token "
                + "(coordinator.currentHistoryToken(), or the last line of ingest history)\n")
        #expect(try IngestBinary.run(["history", store]).stdout == "{\"token\":\"\(end)\"}\n")
    }

    @Test func refusesWhatItCannotDoSayingWhy() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.sqlite")
        let notAToken = try IngestBinary.run(["history", store, "--since", "42"])
        #expect(notAToken.status == 2)
        #expect(notAToken.stderr.contains("--since '42' is not a history token (POSITION@STORE-ID, as this command prints)"), "\(notAToken.stderr)")
        let json = try IngestBinary.run(["history", store, "--follow", "--format", "json"])
        #expect(json.stderr.contains("--follow prints changes as they come: use --format ndjson or table"), "\(json.stderr)")
        let missing = try IngestBinary.run(["history", store])
        #expect(missing.status == 1)
        #expect(missing.stderr == "ingest: \(store) is not an Ingest store: there is no file there\n")
    }
}
