import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// Xcode model files made to hurt: a DOCTYPE whose entities would expand without limit, other
/// encodings, XML errors said in words, and a large well-formed model that must load.
@Suite struct XcodeModelHostileTests {
    static let doctypeRefusal = "has a document type declaration (<!DOCTYPE …>), which Xcode never writes in a model: refused, as its entities could expand without limit"

    /// A `.xcdatamodel` directory in `directory` whose `contents` is `bytes`; its URL and the contents' path.
    static func model(_ bytes: [UInt8], in directory: TemporaryDirectory, named name: String = "Hostile.xcdatamodel") throws -> (URL, String) {
        let model = URL(fileURLWithPath: directory.file(name))
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        let contents = model.appendingPathComponent("contents")
        try Data(bytes).write(to: contents)
        return (model, contents.path)
    }

    /// 1.6 MB naming one 1 MB internal entity 200,000 times: 200 GB once expanded.
    static let entityBomb: [UInt8] = {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE model [<!ENTITY e \"" + String(repeating: "x", count: 1 << 20) + "\">]>\n"
        text += "<model><entity name=\"A\"><attribute name=\"id\" attributeType=\"String\"/></entity>"
        text += String(repeating: "&e;", count: 200_000) + "</model>\n"
        return Array(text.utf8)
    }()

    /// Expanding it ran for minutes; refusing it reads only the prolog (the limit guards
    /// against a hang only: under the whole suite a test may wait minutes for a thread).
    @Test(.timeLimit(.minutes(10))) func aDoctypeWithAnInternalEntityIsRefusedAtOnce() throws {
        let directory = try TemporaryDirectory()
        let (model, contents) = try Self.model(Self.entityBomb, in: directory)
        #expect(throws: XcodeModelError(path: contents, problems: [Self.doctypeRefusal])) { try Model.load(xcdatamodel: model) }
    }

    @Test(.timeLimit(.minutes(10))) func codegenRefusesTheDoctypeNamingTheFile() throws {
        let directory = try TemporaryDirectory()
        let (model, contents) = try Self.model(Self.entityBomb, in: directory)
        let refused = try IngestBinary.run(["codegen", model.path])
        #expect(refused.status == 1)
        #expect(refused.stdout == "")
        #expect(refused.stderr == "ingest: \(contents): \(Self.doctypeRefusal)\n")
    }

    @Test func anyDoctypeIsRefusedWhereverThePrologPutsIt() throws {
        let directory = try TemporaryDirectory()
        let prologs = [
            "<!DOCTYPE model>\n<model/>",
            "\u{FEFF}<?xml version=\"1.0\"?>\n<!-- made by hand --> <?xml-stylesheet href=\"x\"?>\n<!DOCTYPE model SYSTEM \"model.dtd\">\n<model/>",
            "<?xml version=\"1.0\"?><!DOCTYPE model [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><model name=\"&x;\"/>",
        ]
        for (index, prolog) in prologs.enumerated() {
            let (model, contents) = try Self.model(Array(prolog.utf8), in: directory, named: "M\(index).xcdatamodel")
            #expect(throws: XcodeModelError(path: contents, problems: [Self.doctypeRefusal])) { try Model.load(xcdatamodel: model) }
        }
        // A DOCTYPE inside a comment is no declaration: the model loads.
        let (commented, _) = try Self.model(Array("<!-- <!DOCTYPE model> --><model><entity name=\"A\"/></model>".utf8), in: directory,
                                            named: "Commented.xcdatamodel")
        #expect(try Model.load(xcdatamodel: commented) == Model(entities: [Entity("A", attributes: [])]))
    }

    @Test func encodingsOtherThanUTF8AreRefused() throws {
        let directory = try TemporaryDirectory()
        let utf16: [UInt8] = [0xFF, 0xFE] + Array("<!DOCTYPE model><model/>".utf8).flatMap { [$0, 0] }
        let (wide, wideContents) = try Self.model(utf16, in: directory, named: "Wide.xcdatamodel")
        #expect(throws: XcodeModelError(path: wideContents, problems: ["not in UTF-8, as Xcode writes a model's contents"])) {
            try Model.load(xcdatamodel: wide)
        }
        // In UTF-7, "+ADw-!DOCTYPE" is "<!DOCTYPE".
        let (seven, sevenContents) = try Self.model(Array("<?xml version=\"1.0\" encoding=\"UTF-7\"?>+ADw-!DOCTYPE model+AD4-<model/>".utf8),
                                                    in: directory, named: "Seven.xcdatamodel")
        #expect(throws: XcodeModelError(path: sevenContents, problems: ["declares the encoding UTF-7: Xcode writes a model's contents in UTF-8"])) {
            try Model.load(xcdatamodel: seven)
        }
        let (declared, _) = try Self.model(Array("<?xml version=\"1.0\" encoding=\"utf-8\"?><model><entity name=\"A\"/></model>".utf8),
                                           in: directory, named: "Declared.xcdatamodel")
        #expect(try Model.load(xcdatamodel: declared) == Model(entities: [Entity("A", attributes: [])]))
    }

    @Test func xmlErrorsAreSaidInWords() throws {
        let directory = try TemporaryDirectory()
        let cases: [(String, String)] = [
            (#"<model><entity name="A" name="B"/></model>"#, "an element gives the same attribute twice (in <model>)"),
            (#"<model><entity name="A&B"/></model>"#, "an entity reference without its closing ; (write &amp; for &) (in <model>)"),
            (#"<model><entity name="A" x="<"/></model>"#, "an attribute's value holds a < (write &lt;) (in <model>)"),
            ("<model><!-- a -- b --><entity name=\"A\"/></model>", "a comment holds -- (not allowed inside one) (in <model>)"),
            (#"<model><entity name="A"/></model><model/>"#, "there is more after the end of the root element"),
            (#"<model><entity name="A">"#, "the document ends early (in <entity>)"),
            ("<model><entity name=\"A\u{1}\"/></model>", "a character that XML does not allow (in <model>)"),
        ]
        for (index, (text, problem)) in cases.enumerated() {
            let (model, contents) = try Self.model(Array(text.utf8), in: directory, named: "E\(index).xcdatamodel")
            #expect(throws: XcodeModelError(path: contents, problems: ["not well-formed XML at line 1: \(problem)"])) {
                try Model.load(xcdatamodel: model)
            }
        }
        // Error 29 needs a DOCTYPE (now refused before parsing): its words, and a code no word covers.
        #expect(XcodeModelReader.problem(29) == "an attribute's value refers to an external entity")
        #expect(XcodeModelReader.problem(4000) == "the XML parser's error 4000 (libxml2's xmlParserErrors, in libxml/xmlerror.h)")
    }

    @Test func aWellFormedModelOfMoreThan10MBLoads() throws {
        let directory = try TemporaryDirectory()
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">\n"
        let attributes = (0..<100).map { "        <attribute name=\"a\($0)\" optional=\"YES\" attributeType=\"String\"/>\n" }.joined()
        var entities = 0
        while text.utf8.count <= 10_500_000 {
            text += "    <entity name=\"E\(entities)\" representedClassName=\"E\(entities)\" syncable=\"YES\">\n" + attributes + "    </entity>\n"
            entities += 1
        }
        text += "</model>\n"
        let (model, _) = try Self.model(Array(text.utf8), in: directory)
        let loaded = try Model.load(xcdatamodel: model)
        #expect(loaded.entities.count == entities)
        #expect(loaded.entities.last == Entity("E\(entities - 1)", attributes: (0..<100).map { Attribute("a\($0)", .string) }))
    }
}
