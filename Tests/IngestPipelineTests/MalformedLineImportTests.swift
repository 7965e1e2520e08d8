import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// `"feed": {"ndjson": true, "malformedLines": "reject"}`: a malformed line is a rejected
/// record (its chunk, index, line, column and text in the rejects file), the import goes
/// on, and the summary counts it.
@Suite struct MalformedLineImportTests {
    static func pipeline(_ malformedLines: String, ndjson: Bool = true) -> String {
        """
        { "model": { "entities": [ { "name": "T", "attributes": [ { "name": "id", "type": "int64", "optional": false },
                                                                 { "name": "v", "type": "string" } ], "unique": [["id"]] } ] },
          "feed": { "ndjson": \(ndjson), "malformedLines": "\(malformedLines)" }, "record": "T",
          "mappings": { "T": { "attributes": { "id": "id", "v": "v" } } } }
        """
    }

    @Test(arguments: [1, 2])
    func malformedLinesAreRejectedAndTheRestImported(workers: Int) throws {
        let dir = try TemporaryDirectory()
        var lines = (1...40).map { #"{"id":\#($0),"v":"v\#($0)"}"# }
        lines[9] = #"{"id":10,"v":"#
        lines[24] = "not json"
        let feed = try dir.write("feed.ndjson", Array((lines.joined(separator: "\n") + "\n").utf8))
        let spec = try PipelineSpec.parse(Array(Self.pipeline("reject").utf8))
        let report = try Importer(spec: spec, options: Importer.Options(feed: feed, store: dir.file("store.sqlite"), workers: workers,
                                                                        saveEvery: 5, chunkSize: 8)).run()
        #expect(report.imported == 38 && report.rejected == 2)
        #expect(try storeRows(dir.file("store.sqlite"), "SELECT count(*), sum(id) FROM T") == ["38|\(820 - 10 - 25)"])
        let rejects = try String(contentsOfFile: report.rejectsFile, encoding: .utf8).split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        }
        #expect(rejects.map { "\($0["chunk"]!) \($0["index"]!) \($0["reason"]!)" } == [
            "2 1 malformed line 10, column 1 (byte 162): the line ends inside record 10 (NDJSON holds one value per line)",
            "4 0 malformed line 25, column 1 (byte 456): malformed JSON: invalid literal (JSON's literals are true, false and null)",
        ])
        #expect((rejects[1]["text"] as? String)?.contains(#""@line":"not json""#) == true)
    }

    @Test func onlyNDJSONLinesCanBeRejectedOneByOne() throws {
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(Self.pipeline("reject", ndjson: false).utf8)) }
        #expect(throws: PipelineError.self) { try PipelineSpec.parse(Array(Self.pipeline("skip").utf8)) }
    }
}
