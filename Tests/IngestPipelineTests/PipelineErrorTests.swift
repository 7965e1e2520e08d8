import Foundation
import Testing
@testable import IngestPipeline

/// The pipeline's errors say the same as `description` wherever a program prints them,
/// and keep their parts apart without reading them back from the text.
@Suite struct PipelineErrorTests {
    @Test func localizedDescriptionIsTheDescription() {
        let errors: [any Error & CustomStringConvertible] = [
            ImportError(.storeBusy(store: "store.sqlite", holder: "pid 7")),
            ImportError("stopped"),
            PipelineError(at: "pipeline.feed", "recordsAt and ndjson exclude each other"),
        ]
        for error in errors { #expect(error.localizedDescription == error.description) }
    }

    @Test func aPipelineErrorKeepsItsPlaceApartFromItsProblem() {
        let model = PipelineError(at: "pipeline.model", "cannot read the model file m.json")
        #expect(model.kind == .invalidModel && model.place == "pipeline.model" && model.problem == "cannot read the model file m.json")
        #expect(model == PipelineError("pipeline.model: cannot read the model file m.json"))
        #expect(PipelineError(at: "pipeline.feed.rows", "expected \"header\"").kind == .invalidField)
        // A feed named pipeline.json is a name in the problem, not a place in the pipeline.
        let inference = PipelineError(at: nil, "pipeline.json: none of the 3 records read is an object, so there is nothing to map")
        #expect(inference.place == nil && inference.message == "pipeline.json: none of the 3 records read is an object, so there is nothing to map")
    }
}
