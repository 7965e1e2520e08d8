import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Inference over records with very many members: each name is checked against those
/// before it by lookup, not by a pass over all of them (20,000 members took 9 s, 200,000
/// did not finish in minutes).
@Suite struct InferenceScaleTests {
    @Test(.timeLimit(.minutes(10))) func fiftyThousandMemberNamesAreNamedAsFewWouldBe() throws {
        let dir = try TemporaryDirectory()
        let count = 25_000
        // Each m…x has an M…x differing only in case: SQL names ignore case, so it becomes M…x2.
        var record = "{\"id\": 1"
        for index in 0..<count { record += ", \"m\(index)x\": \(index)" }
        for index in 0..<count { record += ", \"M\(index)x\": \(index)" }
        record += ", \"owner\": {\"id\": 7, \"name\": \"n\"}, \"Owner\": {\"id\": 8, \"name\": \"o\", \"age\": 3}}"
        let feed = try dir.write("wide.json", Array(("[" + record + "]").utf8))
        let inference = try PipelineInference.infer(feed: feed)
        let wide = try #require(inference.spec.model.entity("Wide"))
        let expected = ["id"] + (0..<count).map { "m\($0)x" } + (0..<count).map { "M\($0)x2" }
        #expect(wide.attributes.map(\.name) == expected)
        #expect(wide.attributes.dropFirst().allSatisfy { $0.type == .int64 })
        // Both nested members find or create one Owner by id; the second relationship's name is taken, as x's is.
        #expect(wide.relationships.map { "\($0.name) → \($0.destination) (\($0.inverse))" } == ["owner → Owner (wides)", "Owner2 → Owner (wides2)"])
        #expect(inference.spec.model.entities.map(\.name) == ["Wide", "Owner"])
        #expect(inference.spec.model.entity("Owner")?.attributes.map(\.name) == ["id", "name", "age"])
        #expect(inference.report.contains("Wide.M24999x: int64 (1 whole number)"))
        #expect(inference.report.count == 2 * count + 9, "\(inference.report.suffix(6))")
    }
}
