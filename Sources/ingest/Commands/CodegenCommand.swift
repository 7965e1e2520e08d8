import ArgumentParser
import Foundation
import IngestPipeline
import IngestStore

extension Ingest {
    struct Codegen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate typed Swift classes for a model (Xcode's \"Create NSManagedObject Subclass\").",
            discussion: """
            Writes one type per entity, with a typed property per attribute and relationship and a
            typed fetch request (Photo.fetchRequest()). Add the file to a target that depends on
            IngestStore; run this again when the model changes.

            Examples:
              ingest codegen Pipelines/photos.json -o Sources/App/Models.swift
              ingest codegen Photos.xcdatamodeld -o Sources/App/Models.swift
            """
        )

        @Argument(help: "A pipeline file (its model), a model file (JSON, as Model.load(json:) reads), or an Xcode model (.xcdatamodeld, .xcdatamodel).")
        var input: String

        @Option(name: .shortAndLong, help: ArgumentHelp("The Swift file to write ('-' or none: standard output).", valueName: "file"))
        var output: String?

        func run() throws {
            let model = try Self.model(at: input)
            let source: String
            do {
                source = try ModelCodegen.swiftSource(for: model, origin: URL(fileURLWithPath: input).lastPathComponent)
            } catch let problem as ModelCodegen.Problem {
                throw CommandFailure("\(input): \(problem)")
            }
            if let output, output != "-" {
                try FileOpsCLI.write(source, to: output)
                Console.error("wrote \(model.entities.count) type(s) to \(output)\n")
            } else {
                print(source, terminator: "")
            }
        }

        /// The model of a pipeline file, or of a model file.
        static func model(at path: String) throws -> Model {
            let url = URL(fileURLWithPath: path)
            if ["xcdatamodeld", "xcdatamodel"].contains(url.pathExtension) { return try Model.load(xcdatamodel: url) }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandFailure("\(path): cannot read the file")
            }
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            if object?["model"] != nil { return try PipelineSpec.load(path: path).model }
            do {
                return try Model.load(json: data, strict: true)
            } catch {
                throw CommandFailure("\(path): neither a pipeline (with a \"model\") nor a model file: \(error)")
            }
        }
    }
}
