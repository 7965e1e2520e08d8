import Foundation
import IngestStore
import IngestTestSupport
import Testing

/// `ingest codegen`: the typed classes of a model file or a pipeline's model.
@Suite struct CodegenCommandTests {
    @Test func writesTheCommittedTypedClassesAndReadsPipelinesToo() throws {
        let root = PipelineSpecTests.root
        let printed = try IngestBinary.run(["codegen", root.appendingPathComponent("Fixtures/models/albums.json").path])
        #expect(printed.status == 0, "\(printed.stderr)")
        let committed = try String(contentsOf: root.appendingPathComponent("Tests/GeneratedModelTests/Models.swift"), encoding: .utf8)
        #expect(printed.stdout == committed)
        let dir = try TemporaryDirectory()
        let written = try IngestBinary.run(["codegen", root.appendingPathComponent("Pipelines/photos.json").path, "-o", dir.file("Models.swift")])
        #expect(written.status == 0 && written.stderr == "wrote 2 type(s) to \(dir.file("Models.swift"))\n")
        let source = try String(contentsOfFile: dir.file("Models.swift"), encoding: .utf8)
        #expect(source.contains("public struct Photo: TypedObject {") && source.contains("public var whoTook: Photographer? {")
                && source.contains("public var photos: [Photo] {"))
    }

    @Test func refusesNamesTheTypesCannotHaveSayingWhich() throws {
        let dir = try TemporaryDirectory()
        let model = try dir.write("model.json", Array("""
            {"entities": [{"name": "Photo", "attributes": [{"name": "managedObject", "type": "string"}]}]}
            """.utf8))
        let refused = try IngestBinary.run(["codegen", model])
        #expect(refused.status == 1)
        #expect(refused.stderr == "ingest: \(model): Photo.managedObject: 'managedObject' is a name the generated types use themselves\n")
        let shadowing = try dir.write("dates.json", Array("""
            {"entities": [{"name": "Date", "attributes": [{"name": "day", "type": "string"}]}]}
            """.utf8))
        #expect(try IngestBinary.run(["codegen", shadowing]).stderr
                == "ingest: \(shadowing): entity Date: 'Date' is a name the generated file uses for a type of its own\n")
        let notAModel = try dir.write("notes.json", Array("[1, 2]".utf8))
        let wrong = try IngestBinary.run(["codegen", notAModel])
        #expect(wrong.status == 1 && wrong.stderr.hasPrefix("ingest: \(notAModel): neither a pipeline (with a \"model\") nor a model file: "), "\(wrong.stderr)")
    }
}
