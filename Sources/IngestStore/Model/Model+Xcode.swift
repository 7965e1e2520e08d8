public import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Why an Xcode model cannot be used: each problem names the entity or property.
public struct XcodeModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The model file or package.
    public var path: String
    public var problems: [String]

    public var description: String {
        "\(path): " + (problems.count == 1 ? problems[0] : problems.count.description + " problems: " + problems.joined(separator: "; "))
    }
}

extension Model {
    /// Reads an Xcode model: a `.xcdatamodeld` package (the version its `.xccurrentversion`
    /// names, or its only version) or a bare `.xcdatamodel`, whose `contents` is the XML
    /// Xcode writes. It reads entities; attributes with their type, optional, default,
    /// indexed, transient and validation rules (minimum, maximum, regular expression);
    /// relationships with inverse, to-many and delete rule; uniqueness constraints
    /// and single-property fetch indexes.
    /// - Throws: `XcodeModelError` naming everything it cannot honour (`Photo.location:
    ///   Transformable attributes are not supported`), or why the files cannot be read;
    ///   `ModelError` when what it read is not a valid model.
    public static func load(xcdatamodel url: URL) throws -> Model {
        let contents = try XcodeModelReader.contentsFile(of: url)
        guard let data = FileManager.default.contents(atPath: contents.path) else {
            throw XcodeModelError(path: contents.path, problems: ["cannot read the file"])
        }
        return try XcodeModelReader(path: contents.path).model(from: data).validated()
    }
}

/// Reads the `contents` XML of an `.xcdatamodel` into a `Model`.
struct XcodeModelReader {
    let path: String

    /// The `contents` file of a model package or model.
    @_optimize(none)
    static func contentsFile(of url: URL) throws -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw XcodeModelError(path: url.path, problems: ["no .xcdatamodeld or .xcdatamodel directory there"])
        }
        if url.pathExtension == "xcdatamodel" { return url.appendingPathComponent("contents") }
        guard url.pathExtension == "xcdatamodeld" else {
            throw XcodeModelError(path: url.path, problems: ["not an Xcode model (.xcdatamodeld or .xcdatamodel)"])
        }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).filter { $0.hasSuffix(".xcdatamodel") }.sorted()
        var current: String?
        let pointer = url.appendingPathComponent(".xccurrentversion")
        if let data = FileManager.default.contents(atPath: pointer.path) {
            guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
                  let name = plist["_XCCurrentVersionName"] as? String else {
                throw XcodeModelError(path: pointer.path, problems: ["not a property list naming _XCCurrentVersionName"])
            }
            guard versions.contains(name) else {
                throw XcodeModelError(path: pointer.path, problems: ["names the version \(name), which the package does not hold (it holds: \(versions.joined(separator: ", ")))"])
            }
            current = name
        } else if versions.count == 1 {
            current = versions[0]
        }
        guard let current else {
            throw XcodeModelError(path: url.path, problems: [versions.isEmpty ? "holds no .xcdatamodel version"
                : "has \(versions.count) versions and no .xccurrentversion saying which is current"])
        }
        return url.appendingPathComponent(current).appendingPathComponent("contents")
    }

    @_optimize(none)
    func model(from data: Data) throws -> Model {
        if let refusal = Self.prologRefusal(data) { throw XcodeModelError(path: path, problems: [refusal]) }
        let collector = Collector()
        // From a stream the parser reads the file in slices: given all of it at once, libxml2
        // (without XML_PARSE_HUGE, which XMLParser never sets) stops past 10 MB, calling a
        // well-formed model "not well-formed".
        let parser = XMLParser(stream: InputStream(data: data))
        parser.delegate = collector
        let parsed = parser.parse()
        if !parsed || collector.error != nil || !collector.open.isEmpty {
            let line = collector.errorLine ?? parser.lineNumber
            let reason = collector.error
                ?? collector.open.last.map { "<\($0)> is not closed" } ?? parser.parserError.map { "\($0)" } ?? "unknown error"
            throw XcodeModelError(path: path, problems: ["not well-formed XML at line \(line): \(reason)"])
        }
        guard collector.sawModel else { throw XcodeModelError(path: path, problems: ["no <model> element: not an Xcode model's contents"]) }
        var problems: [String] = []
        var entities: [Entity] = []
        for element in collector.entities {
            let name = element.attributes["name"] ?? "?"
            var attributes: [Attribute] = []
            for attributeElement in element.attributeElements {
                if let made = attribute(attributeElement, entity: name, problems: &problems) { attributes.append(made) }
            }
            var relationships: [Relationship] = []
            for relationshipElement in element.relationships {
                if let made = relationship(relationshipElement, entity: name, problems: &problems) { relationships.append(made) }
            }
            for index in element.fetchIndexes {
                let indexName = index.name ?? "?"
                guard index.properties.count == 1, let property = index.properties.first else {
                    problems.append("\(name).\(indexName): fetch indexes over \(index.properties.count) properties are not supported (one property each)")
                    continue
                }
                if let position = attributes.firstIndex(where: { $0.name == property }) {
                    attributes[position].isIndexed = true
                } else {
                    problems.append("\(name).\(indexName): indexes \(property), which is not an attribute of \(name)")
                }
            }
            if element.compoundIndexes > 0 { problems.append("\(name): compound indexes (compoundIndexes) are not supported") }
            entities.append(Entity(name, parent: element.attributes["parentEntity"], abstract: element.attributes["isAbstract"] == "YES",
                                   attributes: attributes, relationships: relationships, uniquenessConstraints: element.constraints))
        }
        problems += collector.unsupported.sorted().map { "the model: \($0) are not supported" }
        if !problems.isEmpty { throw XcodeModelError(path: path, problems: problems) }
        return Model(entities: entities)
    }

    /// What libxml2's error `code` (xmlParserErrors in libxml/xmlerror.h; NSXMLParserErrorDomain
    /// codes are the same numbers) says is wrong, in words.
    static func problem(_ code: Int) -> String {
        switch code {
        case 1: "the document is too large or too deeply nested for the XML parser" // XML_ERR_INTERNAL_ERROR
        case 2: "the XML parser ran out of memory" // XML_ERR_NO_MEMORY
        case 3: "the document does not start with an element (<…>)" // XML_ERR_DOCUMENT_START
        case 4: "the document is empty" // XML_ERR_DOCUMENT_EMPTY
        case 5: "the document ends early" // XML_ERR_DOCUMENT_END
        case 6, 7, 8: "a character reference (&#…;) is not valid" // XML_ERR_INVALID_HEX_CHARREF, _DEC_CHARREF, _CHARREF
        case 9: "a character that XML does not allow" // XML_ERR_INVALID_CHAR
        case 22: "a & that starts no entity (write &amp; for &)" // XML_ERR_ENTITYREF_NO_NAME
        case 23: "an entity reference without its closing ; (write &amp; for &)" // XML_ERR_ENTITYREF_SEMICOL_MISSING
        case 26, 27: "an undeclared entity (only &amp; &lt; &gt; &quot; &apos; are known)" // XML_ERR_UNDECLARED_ENTITY, XML_WAR_
        case 28: "an entity that holds no XML is used as text" // XML_ERR_UNPARSED_ENTITY
        case 29: "an attribute's value refers to an external entity" // XML_ERR_ENTITY_IS_EXTERNAL
        case 31, 32: "an encoding the XML parser does not know" // XML_ERR_UNKNOWN_ENCODING, XML_ERR_UNSUPPORTED_ENCODING
        case 33, 34: "a quoted value is not closed" // XML_ERR_STRING_NOT_STARTED, XML_ERR_STRING_NOT_CLOSED
        case 38: "an attribute's value holds a < (write &lt;)" // XML_ERR_LT_IN_ATTRIBUTE
        case 39: "an attribute's value is not quoted" // XML_ERR_ATTRIBUTE_NOT_STARTED
        case 40: "an attribute's value is not closed" // XML_ERR_ATTRIBUTE_NOT_FINISHED
        case 41: "an attribute has no value" // XML_ERR_ATTRIBUTE_WITHOUT_VALUE
        case 42: "an element gives the same attribute twice" // XML_ERR_ATTRIBUTE_REDEFINED
        case 45: "a comment is not closed (-->)" // XML_ERR_COMMENT_NOT_FINISHED
        case 46, 47: "a processing instruction (<?…?>) is not finished" // XML_ERR_PI_NOT_STARTED, XML_ERR_PI_NOT_FINISHED
        case 56, 57: "the XML declaration (<?xml …?>) is not finished" // XML_ERR_XMLDECL_NOT_STARTED, _NOT_FINISHED
        case 63: "a CDATA section is not closed (]]>)" // XML_ERR_CDATA_NOT_FINISHED
        case 64: "an XML declaration (<?xml …?>) that is not at the very start" // XML_ERR_RESERVED_XML_NAME
        case 65: "a space is missing (between attributes, say)" // XML_ERR_SPACE_REQUIRED
        case 68: "a name is missing (after < or in a tag)" // XML_ERR_NAME_REQUIRED
        case 73: "a tag is missing its >" // XML_ERR_GT_REQUIRED
        case 75: "an attribute has no = before its value" // XML_ERR_EQUAL_REQUIRED
        case 76: "a closing tag does not match the open one" // XML_ERR_TAG_NAME_MISMATCH
        case 77: "a tag is not finished" // XML_ERR_TAG_NOT_FINISHED
        case 80: "a comment holds -- (not allowed inside one)" // XML_ERR_HYPHEN_IN_COMMENT
        case 81: "bytes that are not valid UTF-8" // XML_ERR_INVALID_ENCODING
        case 85: "elements are not properly nested" // XML_ERR_NOT_WELL_BALANCED
        case 86: "there is more after the end of the root element" // XML_ERR_EXTRA_CONTENT
        case 89: "an entity refers to itself" // XML_ERR_ENTITY_LOOP
        case 96, 108, 109: "the XML declaration's version is missing or not 1.0" // XML_ERR_VERSION_MISSING, _UNKNOWN_VERSION, _MISMATCH
        case 110: "a name is too long" // XML_ERR_NAME_TOO_LONG
        case 201: "a name uses a namespace prefix that is not declared" // XML_NS_ERR_UNDEFINED_NAMESPACE
        default: "the XML parser's error \(code) (libxml2's xmlParserErrors, in libxml/xmlerror.h)"
        }
    }

    /// Why `data` is refused before it is parsed, or nil. Xcode writes a model's contents in
    /// UTF-8 with no document type declaration; a DOCTYPE's internal entities expand without
    /// limit as the parser substitutes them (a 1 MB entity named 200,000 times ran for
    /// minutes), so any is refused, and so is any other encoding, in which the declaration
    /// would not be seen for what it is here.
    @_optimize(none)
    static func prologRefusal(_ data: Data) -> String? {
        let bytes = [UInt8](data.prefix(4))
        // UTF-16 and UTF-32 (a byte-order mark, or zero bytes around the first "<"), EBCDIC ("<?xm").
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) || bytes.contains(0)
            || bytes == [0x4C, 0x6F, 0xA7, 0x94] {
            return "not in UTF-8, as Xcode writes a model's contents"
        }
        var rest = data[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        func skipSpace() { rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A } }
        // Only the prolog can hold a DOCTYPE: the XML declaration, comments and processing
        // instructions, before the first element.
        while true {
            skipSpace()
            if rest.starts(with: Array("<?".utf8)) {
                guard let end = rest.firstRange(of: Array("?>".utf8)) else { return nil }
                let instruction = String(decoding: rest[rest.startIndex..<end.upperBound], as: UTF8.self)
                if instruction.hasPrefix("<?xml"), instruction.dropFirst(5).first?.isWhitespace == true, let encoding = declaredEncoding(instruction), !["UTF-8", "UTF8"].contains(encoding.uppercased()) {
                    return "declares the encoding \(encoding): Xcode writes a model's contents in UTF-8"
                }
                rest = rest[end.upperBound...]
            } else if rest.starts(with: Array("<!--".utf8)) {
                guard let end = rest.dropFirst(4).firstRange(of: Array("-->".utf8)) else { return nil }
                rest = rest[end.upperBound...]
            } else if rest.starts(with: Array("<!DOCTYPE".utf8)) {
                return "has a document type declaration (<!DOCTYPE …>), which Xcode never writes in a model: refused, as its entities could expand without limit"
            } else {
                return nil
            }
        }
    }

    /// The `encoding` an XML declaration (`<?xml version="1.0" encoding="UTF-8"?>`) names.
    private static func declaredEncoding(_ declaration: String) -> String? {
        guard let name = declaration.range(of: "encoding") else { return nil }
        let after = declaration[name.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let quote = after.first, quote == "\"" || quote == "'" else { return nil }
        return String(after.dropFirst().prefix { $0 != quote })
    }

    @_optimize(none)
    private func attribute(_ element: [String: String], entity: String, problems: inout [String]) -> Attribute? {
        let name = element["name"] ?? "?"
        let place = "\(entity).\(name)"
        let xcodeType = element["attributeType"] ?? "Undefined"
        if element["derived"] == "YES" { problems.append("\(place): derived attributes are not supported") }
        let type: AttributeType
        switch xcodeType {
        case "String": type = .string
        case "Integer 16": type = .int16
        case "Integer 32": type = .int32
        case "Integer 64": type = .int64
        case "Double": type = .double
        case "Boolean": type = .bool
        case "Date": type = .date
        case "Binary": type = .binary
        case "UUID": type = .uuid
        case "Decimal": type = .decimal
        default:
            problems.append("\(place): \(xcodeType) attributes are not supported")
            return nil
        }
        var defaultValue: Value?
        if let text = element["defaultValueString"] {
            defaultValue = Self.value(text, type)
            if defaultValue == nil { problems.append("\(place): the default \"\(text)\" is not a valid \(xcodeType)") }
        } else if type == .date, let seconds = element["defaultDateTimeInterval"].flatMap(Double.init) {
            defaultValue = .date(Date(timeIntervalSinceReferenceDate: seconds))
        }
        return Attribute(name, type, optional: element["optional"] == "YES", default: defaultValue, indexed: element["indexed"] == "YES",
                         transient: element["transient"] == "YES", rules: rules(element, type, place: place, xcodeType, &problems))
    }

    static func value(_ text: String, _ type: AttributeType) -> Value? {
        switch type {
        case .string: .string(text)
        case .int16, .int32, .int64: Int64(text).map(Value.int)
        case .double: Double(text).map(Value.double)
        case .bool: ["YES", "1", "true"].contains(text) ? .bool(true) : ["NO", "0", "false"].contains(text) ? .bool(false) : nil
        case .uuid: UUID(uuidString: text).map(Value.uuid)
        case .decimal: DecimalText.canonical(text) != nil ? .decimal(text) : nil
        case .date, .binary: nil
        }
    }

    @_optimize(none)
    private func relationship(_ element: [String: String], entity: String, problems: inout [String]) -> Relationship? {
        let name = element["name"] ?? "?"
        let place = "\(entity).\(name)"
        guard let destination = element["destinationEntity"] else {
            problems.append("\(place): the relationship has no destination entity")
            return nil
        }
        guard let inverse = element["inverseName"] else {
            problems.append("\(place): relationships without an inverse are not supported (set its inverse in Xcode)")
            return nil
        }
        if element["optional"] != "YES" { problems.append("\(place): required relationships are not supported (mark it optional)") }
        let rule: DeleteRule
        switch element["deletionRule"] ?? "Nullify" {
        case "Nullify": rule = .nullify
        case "Cascade": rule = .cascade
        case "Deny": rule = .deny
        case let other:
            problems.append("\(place): the delete rule \(other) is not supported (Nullify, Cascade or Deny)")
            rule = .nullify
        }
        let toMany = element["toMany"] == "YES"
        return Relationship(name, to: destination, inverse: inverse, toMany: toMany, ordered: toMany && element["ordered"] == "YES",
                            deleteRule: rule)
    }

    /// Gathers the elements the model needs as the parser meets them.
    private final class Collector: NSObject, XMLParserDelegate {
        struct EntityElement {
            var attributes: [String: String]
            var attributeElements: [[String: String]] = []
            var relationships: [[String: String]] = []
            var fetchIndexes: [(name: String?, properties: [String])] = []
            var constraints: [[String]] = []
            var compoundIndexes = 0
        }

        /// Elements of the model Ingest cannot honour, outside any entity.
        var unsupported = Set<String>()

        var sawModel = false
        var entities: [EntityElement] = []
        /// Elements opened and not yet closed, innermost last.
        var open: [String] = []
        var error: String?
        var errorLine: Int?
        var rootClosed = false

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            if error == nil {
                let code = (parseError as NSError).code
                // libxml2 says XML_ERR_DOCUMENT_END both for a document cut short and for one that goes on
                // after its root element: only the second has closed its root.
                let problem = code == 5 && open.isEmpty && rootClosed ? "there is more after the end of the root element"
                    : XcodeModelReader.problem(code)
                error = problem + (open.last.map { " (in <\($0)>)" } ?? "")
                errorLine = parser.lineNumber
            }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if open.last == elementName {
                open.removeLast()
                if open.isEmpty { rootClosed = true }
            } else if error == nil {
                error = "</\(elementName)> closes <\(open.last ?? "nothing")>"
                errorLine = parser.lineNumber
            }
        }

        @_optimize(none)
        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let parent = open.last
            open.append(elementName)
            switch elementName {
            case "model": sawModel = true
            case "entity": entities.append(EntityElement(attributes: attributes))
            case "attribute" where parent == "entity": entities[entities.count - 1].attributeElements.append(attributes)
            case "relationship" where parent == "entity": entities[entities.count - 1].relationships.append(attributes)
            case "compoundIndex" where !entities.isEmpty: entities[entities.count - 1].compoundIndexes += 1
            case "attribute" where parent != "entity", "composite":
                unsupported.insert(elementName == "composite" ? "composite attributes" : "attributes outside an entity")
            case "fetchIndex" where !entities.isEmpty: entities[entities.count - 1].fetchIndexes.append((attributes["name"], []))
            case "fetchIndexElement" where !entities.isEmpty:
                if let property = attributes["property"], !entities[entities.count - 1].fetchIndexes.isEmpty {
                    let last = entities[entities.count - 1].fetchIndexes.count - 1
                    entities[entities.count - 1].fetchIndexes[last].properties.append(property)
                }
            case "uniquenessConstraint" where !entities.isEmpty: entities[entities.count - 1].constraints.append([])
            case "constraint" where !entities.isEmpty:
                if let value = attributes["value"], !entities[entities.count - 1].constraints.isEmpty {
                    let last = entities[entities.count - 1].constraints.count - 1
                    entities[entities.count - 1].constraints[last].append(value)
                }
            default: break
            }
        }
    }
}
