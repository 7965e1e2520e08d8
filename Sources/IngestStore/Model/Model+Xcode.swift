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
    /// Xcode writes. It reads entities; attributes with their type, optional, default and
    /// indexed; relationships with inverse, to-many and delete rule; uniqueness constraints
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

    func model(from data: Data) throws -> Model {
        let collector = Collector()
        let parser = XMLParser(data: data)
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

    private func attribute(_ element: [String: String], entity: String, problems: inout [String]) -> Attribute? {
        let name = element["name"] ?? "?"
        let place = "\(entity).\(name)"
        let xcodeType = element["attributeType"] ?? "Undefined"
        if element["derived"] == "YES" { problems.append("\(place): derived attributes are not supported") }
        if element["transient"] == "YES" { problems.append("\(place): transient attributes are not supported") }
        for rule in ["minValueString", "maxValueString", "regularExpressionString"] where element[rule] != nil {
            problems.append("\(place): validation rules (\(rule)) are not supported")
        }
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
        return Attribute(name, type, optional: element["optional"] == "YES", default: defaultValue, indexed: element["indexed"] == "YES")
    }

    private static func value(_ text: String, _ type: AttributeType) -> Value? {
        switch type {
        case .string: .string(text)
        case .int16, .int32, .int64: Int64(text).map(Value.int)
        case .double: Double(text).map(Value.double)
        case .bool: ["YES", "1", "true"].contains(text) ? .bool(true) : ["NO", "0", "false"].contains(text) ? .bool(false) : nil
        case .uuid: UUID(uuidString: text).map(Value.uuid)
        case .decimal: Decimal(string: text) != nil ? .decimal(text) : nil
        case .date, .binary: nil
        }
    }

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

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            if error == nil {
                let code = (parseError as NSError).code
                let names = [4: "the document is empty", 5: "the document ends early", 76: "a closing tag does not match the open one",
                             77: "a tag is not finished", 39: "an attribute's value is not quoted", 41: "an attribute has no value"]
                error = (names[code] ?? "libxml2's error \(code)") + (open.last.map { " (in <\($0)>)" } ?? "")
                errorLine = parser.lineNumber
            }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if open.last == elementName {
                open.removeLast()
            } else if error == nil {
                error = "</\(elementName)> closes <\(open.last ?? "nothing")>"
                errorLine = parser.lineNumber
            }
        }

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
