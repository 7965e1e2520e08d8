import Crypto
import Foundation
import IngestJSON
import IngestStore

/// A pipeline file: the model, the feed's shape, which entity a record becomes, how
/// record keys map onto attributes and relationships, and import defaults.
///
/// ```json
/// { "model": { "entities": [ … ] },
///   "feed": { "recordsAt": "features" },
///   "record": "Photo",
///   "mappings": {
///     "Photo": { "attributes": { "id": "id", "views": { "from": "views", "default": 0 } },
///                "relationships": { "whoTook": { "from": "photographer" } } },
///     "Photographer": { "attributes": { "id": "id", "name": "name" } } },
///   "import": { "chunkSize": 5000, "workers": 2, "saveEvery": 1000 } }
/// ```
public struct PipelineSpec: Sendable {
    public var model: Model
    public var feed: FeedShape
    /// Objects, or rows (arrays of values) named by a header row or given columns.
    public var recordForm: RecordForm = .objects
    /// The entity each record becomes (with a discriminator: the one for values it
    /// does not name, or the first it names).
    public var recordEntity: String
    /// Chooses each record's entity by a field's value, when the feed mixes kinds.
    public var discriminator: Discriminator?

    /// `"record": {"by": "type", "entities": {"PushEvent": "Push", …}, "otherwise": "Event"}`:
    /// the value at `by` names the record's entity, through `entities` (or directly,
    /// when there is no table); a value it does not name takes `otherwise`, or the
    /// record is rejected.
    public struct Discriminator: Sendable, Equatable {
        public var field: JSONPath
        /// Value → entity; empty when values are entity names themselves.
        public var entities: [String: String]
        public var otherwise: String?
        /// Every entity a record may become.
        public var candidates: [String]
    }
    public var mappings: [String: EntityMapping]
    public var chunkSize: Int
    public var workers: Int?
    public var saveEvery: Int
    /// SHA-256 of the spec as parsed (compact JSON), kept in the import marker.
    public var hash: String

    /// How one entity is filled from a JSON object.
    public struct EntityMapping: Sendable, Equatable {
        public var entity: String
        /// The attributes that identify an object of this entity for find-or-create
        /// (default: the entity's first uniqueness constraint).
        public var key: [String]
        public var attributes: [AttributeMapping]
        public var relationships: [RelationshipMapping]
        /// How a record meets a stored object with its key (`"onConflict"`, default `update`).
        public var onConflict: ConflictRule = .update
    }

    public struct AttributeMapping: Sendable, Equatable {
        public var attribute: String
        /// Where the value is in the record (see `JSONPath` for the syntax).
        public var from: JSONPath
        public var dates: [DateFormat]
        public var defaultValue: Value?
        public var required: Bool
        /// Store the JSON text of the value (an array of tags, say) in a string attribute.
        public var asJSON: Bool
        /// What is done to the value before it is converted (see `ValueTransform`).
        public var transform = ValueTransform()

        /// The record's value after the transform (nil: the record does not give one).
        /// - Throws: `CoercionError` for a value the transform's table does not name.
        func value(in record: JSONValue) throws -> JSONValue? {
            if let constant = transform.constant { return constant }
            return try transform.apply(from.value(in: record))
        }
    }

    public struct RelationshipMapping: Sendable, Equatable {
        public var relationship: String
        public var from: JSONPath
        /// For a to-many given as one string: the separator that splits it into keys
        /// (`"red, blue"` with `","` names the tags red and blue).
        public var split: String?
        /// For a to-many given by a record whose object is stored: the list replaces the
        /// stored one, or is added to it (`"update": "replace" | "merge"`).
        public var toMany: ToManyRule = .replace
    }

    /// Reads and checks a pipeline file.
    /// - Throws: `PipelineError` naming the file, the place in it and the problem.
    public static func load(path: String) throws -> PipelineSpec {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw PipelineError("\(path): cannot read the pipeline file (\(error.localizedDescription))")
        }
        do {
            return try parse(Array(data))
        } catch let error as PipelineError {
            throw PipelineError("\(path): \(error.message)")
        }
    }

    /// Parses a pipeline from its JSON text.
    /// - Throws: `PipelineError`.
    public static func parse(_ bytes: [UInt8]) throws -> PipelineSpec {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch let error as FeedError {
            throw PipelineError("not valid JSON: \(error.message) at \(error.position)")
        }
        let top = try Fields(root, at: "pipeline", allowed: ["model", "feed", "record", "mappings", "import"])
        let model: Model
        do {
            model = try Model.load(json: Data(try top.required("model").description.utf8))
        } catch let error as ModelError {
            throw PipelineError("pipeline.model: \(error.message)")
        } catch let error as PipelineError {
            throw error
        } catch {
            throw PipelineError("pipeline.model: \(error)")
        }

        var shape = FeedShape.array
        var form = RecordForm.objects
        if let feedValue = top.optional("feed") {
            let feed = try Fields(feedValue, at: "pipeline.feed", allowed: ["recordsAt", "ndjson", "keyed", "rows"])
            let recordsAt = try feed.optional("recordsAt").map { try Fields.string($0, at: "pipeline.feed.recordsAt") }
            let ndjson = try feed.optional("ndjson").map { try Fields.bool($0, at: "pipeline.feed.ndjson") } ?? false
            let keyed = try feed.optional("keyed").map { try Fields.bool($0, at: "pipeline.feed.keyed") } ?? false
            if recordsAt != nil && ndjson { throw PipelineError("pipeline.feed: recordsAt and ndjson exclude each other") }
            if keyed && ndjson { throw PipelineError("pipeline.feed: keyed and ndjson exclude each other") }
            var keys: [String] = []
            if let recordsAt {
                guard case .keyPath(let path)? = FeedShape.recordsAt(recordsAt) else { throw PipelineError("pipeline.feed.recordsAt: '\(recordsAt)' is not a key path") }
                keys = path
                shape = .keyPath(path)
            } else if ndjson {
                shape = .ndjson
            }
            if keyed { shape = .keyed(keys) }
            switch feed.optional("rows") {
            case nil: break
            case .string("header")?: form = .rows(columns: nil)
            case .array(let names)?:
                form = .rows(columns: try names.map { try Fields.string($0, at: "pipeline.feed.rows") })
            default: throw PipelineError("pipeline.feed.rows: expected \"header\" (the first row names the columns) or a list of column names")
            }
        }

        let recordValue = try top.required("record")
        var discriminator: Discriminator?
        let recordEntity: String
        if case .object = recordValue {
            let record = try Fields(recordValue, at: "pipeline.record", allowed: ["by", "entities", "otherwise"])
            let byText = try Fields.string(try record.required("by"), at: "pipeline.record.by")
            let field = try path(byText, at: "pipeline.record.by")
            var table: [String: String] = [:]
            if case .object(let members)? = record.optional("entities") {
                for member in members { table[member.key] = try Fields.string(member.value, at: "pipeline.record.entities.\(member.key)") }
            } else if record.optional("entities") != nil {
                throw PipelineError("pipeline.record.entities: expected an object from field values to entity names")
            }
            let otherwise = try record.optional("otherwise").map { try Fields.string($0, at: "pipeline.record.otherwise") }
            var candidates = Array(Set(table.values)).sorted()
            if let otherwise, !candidates.contains(otherwise) { candidates.append(otherwise) }
            if table.isEmpty {
                // Values name entities themselves: any mapped entity may be a record.
                candidates = model.entities.map(\.name).filter { name in (try? top.required("mappings"))?[name] != nil }
            }
            for name in candidates where model.entity(name) == nil {
                throw PipelineError("pipeline.record: the model has no entity '\(name)'")
            }
            guard let first = otherwise ?? candidates.first else { throw PipelineError("pipeline.record: no entity to choose from") }
            recordEntity = first
            discriminator = Discriminator(field: field, entities: table, otherwise: otherwise, candidates: candidates)
        } else {
            recordEntity = try Fields.string(recordValue, at: "pipeline.record")
            guard model.entity(recordEntity) != nil else {
                throw PipelineError("pipeline.record: the model has no entity '\(recordEntity)'")
            }
        }
        let mappingsValue = try top.required("mappings")
        guard case .object(let members) = mappingsValue else { throw PipelineError("pipeline.mappings: expected an object of entity mappings") }
        var mappings: [String: EntityMapping] = [:]
        for member in members {
            mappings[member.key] = try entityMapping(member.key, member.value, model: model)
        }
        for entity in discriminator?.candidates ?? [recordEntity] where mappings[entity] == nil {
            throw PipelineError("pipeline.mappings: no mapping for the record entity '\(entity)'")
        }
        for mapping in mappings.values {
            let entity = model.entity(mapping.entity)!
            for relationship in mapping.relationships {
                let destination = entity.relationship(relationship.relationship)!.destination
                guard let target = mappings[destination] else {
                    throw PipelineError("pipeline.mappings.\(mapping.entity).relationships.\(relationship.relationship): \(destination) has no mapping")
                }
                guard !target.key.isEmpty else {
                    throw PipelineError("pipeline.mappings.\(destination): related objects are found or created by key, and \(destination) has none (add \"key\" or a uniqueness constraint)")
                }
            }
        }

        var chunkSize = SplitOptions.defaultChunkSize
        var workers: Int?
        var saveEvery = 1_000
        if let importValue = top.optional("import") {
            let options = try Fields(importValue, at: "pipeline.import", allowed: ["chunkSize", "workers", "saveEvery"])
            chunkSize = try options.optional("chunkSize").map { try Fields.positive($0, at: "pipeline.import.chunkSize") } ?? chunkSize
            workers = try options.optional("workers").map { try Fields.positive($0, at: "pipeline.import.workers") }
            saveEvery = try options.optional("saveEvery").map { try Fields.positive($0, at: "pipeline.import.saveEvery") } ?? saveEvery
        }
        let hash = SHA256.hash(data: Data(root.description.utf8)).map { String(format: "%02x", $0) }.joined()
        var spec = PipelineSpec(model: model, feed: shape, recordEntity: recordEntity, mappings: mappings,
                                chunkSize: chunkSize, workers: workers, saveEvery: saveEvery, hash: hash)
        spec.recordForm = form
        spec.discriminator = discriminator
        return spec
    }

    private static func entityMapping(_ name: String, _ value: JSONValue, model: Model) throws -> EntityMapping {
        let at = "pipeline.mappings.\(name)"
        guard let entity = model.entity(name) else { throw PipelineError("\(at): the model has no entity '\(name)'") }
        let fields = try Fields(value, at: at, allowed: ["key", "attributes", "relationships", "onConflict"])
        var onConflict = ConflictRule.update
        if let rule = fields.optional("onConflict") {
            let text = try Fields.string(rule, at: "\(at).onConflict")
            guard let parsed = ConflictRule(rawValue: text) else {
                throw PipelineError("\(at).onConflict: unknown rule '\(text)' (expected \(ConflictRule.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            onConflict = parsed
        }
        var key = entity.uniquenessConstraints.first ?? []
        if let keyValue = fields.optional("key") {
            guard case .array(let items) = keyValue else { throw PipelineError("\(at).key: expected an array of attribute names") }
            key = try items.map { try Fields.string($0, at: "\(at).key") }
            for attribute in key where entity.attribute(attribute) == nil {
                throw PipelineError("\(at).key: \(name) has no attribute '\(attribute)'")
            }
        }
        var attributes: [AttributeMapping] = []
        if case .object(let members)? = fields.optional("attributes") {
            for member in members {
                let place = "\(at).attributes.\(member.key)"
                guard let attribute = entity.attribute(member.key) else {
                    throw PipelineError("\(place): \(name) has no attribute '\(member.key)'")
                }
                attributes.append(try attributeMapping(attribute, member.value, at: place))
            }
        } else if fields.optional("attributes") != nil {
            throw PipelineError("\(at).attributes: expected an object")
        }
        var relationships: [RelationshipMapping] = []
        if case .object(let members)? = fields.optional("relationships") {
            for member in members {
                let place = "\(at).relationships.\(member.key)"
                guard entity.relationship(member.key) != nil else {
                    throw PipelineError("\(place): \(name) has no relationship '\(member.key)'")
                }
                let from: String
                var toMany = ToManyRule.replace
                var split: String?
                if case .string(let path) = member.value {
                    from = path
                } else {
                    let details = try Fields(member.value, at: place, allowed: ["from", "update", "split"])
                    if let separator = details.optional("split") {
                        split = try Fields.string(separator, at: "\(place).split")
                        guard entity.relationship(member.key)!.isToMany, split?.isEmpty == false else {
                            throw PipelineError("\(place).split: a non-empty separator, for a to-many relationship")
                        }
                    }
                    from = try Fields.string(try details.required("from"), at: "\(place).from")
                    if let rule = details.optional("update") {
                        let text = try Fields.string(rule, at: "\(place).update")
                        guard let parsed = ToManyRule(rawValue: text), entity.relationship(member.key)!.isToMany else {
                            throw PipelineError("\(place).update: expected replace or merge, for a to-many relationship")
                        }
                        toMany = parsed
                    }
                }
                relationships.append(RelationshipMapping(relationship: member.key, from: try path(from, at: "\(place).from"), split: split, toMany: toMany))
            }
        }
        try checkPaths(attributes.map(\.from) + relationships.map(\.from), at: at)
        return EntityMapping(entity: name, key: key, attributes: attributes, relationships: relationships, onConflict: onConflict)
    }

    private static func path(_ text: String, at place: String) throws -> JSONPath {
        do {
            return try JSONPath(parsing: text)
        } catch let error as JSONPathError {
            throw PipelineError("\(place): \(error)")
        }
    }

    /// Paths of one mapping that cannot all match: one reads a value as an object (a key
    /// of letters after it) where another reads it as an array (an index after it).
    private static func checkPaths(_ paths: [JSONPath], at place: String) throws {
        var seen: [[JSONPath.Step]: (isArray: Bool, path: JSONPath)] = [:]
        for path in paths {
            for (position, step) in path.steps.enumerated() {
                let prefix = Array(path.steps[..<position])
                let isArray: Bool
                switch step {
                case .index: isArray = true
                case .key(let key): if key.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) && !key.isEmpty { continue } else { isArray = false }
                }
                if let other = seen[prefix], other.isArray != isArray {
                    let (array, object) = isArray ? (path, other.path) : (other.path, path)
                    let name = prefix.isEmpty ? "the record" : JSONPath(steps: prefix, description: "").steps.map { step in
                        switch step {
                        case .key(let key): key
                        case .index(let index): "[\(index)]"
                        }
                    }.joined(separator: ".")
                    throw PipelineError("\(place): '\(array)' reads \(name) as an array and '\(object)' as an object; no record can match both")
                }
                seen[prefix] = (isArray, path)
            }
        }
    }

    private static func attributeMapping(_ attribute: Attribute, _ value: JSONValue, at place: String) throws -> AttributeMapping {
        if case .string(let path) = value {
            return AttributeMapping(attribute: attribute.name, from: try Self.path(path, at: place),
                                    dates: [.iso8601], defaultValue: attribute.defaultValue, required: !attribute.isOptional, asJSON: false)
        }
        let fields = try Fields(value, at: place, allowed: ["from", "dates", "default", "required", "json", "value", "map", "trim", "case"])
        var transform = ValueTransform()
        transform.constant = fields.optional("value")
        if transform.constant != nil, fields.optional("from") != nil {
            throw PipelineError("\(place): a constant \"value\" takes no \"from\"")
        }
        let from = transform.constant != nil ? "@constant" : try Fields.string(try fields.required("from"), at: "\(place).from")
        if let table = fields.optional("map") {
            guard case .object(let members) = table, !members.isEmpty else {
                throw PipelineError("\(place).map: expected an object from the feed's values to the stored ones")
            }
            transform.table = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        }
        transform.trim = try fields.optional("trim").map { try Fields.bool($0, at: "\(place).trim") } ?? false
        if let letterCase = fields.optional("case") {
            let text = try Fields.string(letterCase, at: "\(place).case")
            guard let parsed = ValueTransform.LetterCase(rawValue: text) else {
                throw PipelineError("\(place).case: expected lower or upper")
            }
            transform.letterCase = parsed
        }
        var dates: [DateFormat] = [.iso8601]
        if let datesValue = fields.optional("dates") {
            guard case .array(let items) = datesValue, !items.isEmpty else { throw PipelineError("\(place).dates: expected a list of date formats") }
            dates = try items.map { item in
                let text = try Fields.string(item, at: "\(place).dates")
                switch text {
                case "iso8601": return .iso8601
                case "unix": return .unixSeconds
                case "unixMillis": return .unixMilliseconds
                default:
                    guard text.hasPrefix("pattern:"), text.count > 8 else {
                        throw PipelineError("\(place).dates: unknown date format '\(text)' (expected iso8601, unix, unixMillis or pattern:…)")
                    }
                    return .pattern(String(text.dropFirst(8)))
                }
            }
        }
        var defaultValue = attribute.defaultValue
        if let given = fields.optional("default") {
            do {
                defaultValue = try ValueCoercion.value(given, for: attribute.type, dates: dates)
            } catch let error as CoercionError {
                throw PipelineError("\(place).default: \(error.message) for \(attribute.type.rawValue)")
            }
        }
        let required = try fields.optional("required").map { try Fields.bool($0, at: "\(place).required") } ?? !attribute.isOptional
        let asJSON = try fields.optional("json").map { try Fields.bool($0, at: "\(place).json") } ?? false
        if asJSON && attribute.type != .string { throw PipelineError("\(place).json: only a string attribute can hold JSON text") }
        var mapping = AttributeMapping(attribute: attribute.name, from: try path(from, at: "\(place).from"), dates: dates,
                                       defaultValue: defaultValue, required: required, asJSON: asJSON)
        mapping.transform = transform
        if let constant = transform.constant {
            do {
                _ = try ValueCoercion.value(constant, for: attribute.type, dates: dates)
            } catch let error as CoercionError {
                throw PipelineError("\(place).value: \(error.message) for \(attribute.type.rawValue)")
            }
        }
        return mapping
    }
}

/// A pipeline file that cannot be used, with the place in it.
public struct PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An object's fields, checked against the names allowed at its place in the file.
struct Fields {
    let members: [String: JSONValue]
    let at: String

    init(_ value: JSONValue, at: String, allowed: Set<String>) throws {
        guard case .object(let list) = value else { throw PipelineError("\(at): expected an object") }
        for member in list where !allowed.contains(member.key) {
            throw PipelineError("\(at): unknown field '\(member.key)' (expected \(allowed.sorted().joined(separator: ", ")))")
        }
        members = Dictionary(list.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        self.at = at
    }

    func optional(_ name: String) -> JSONValue? { members[name] }

    func required(_ name: String) throws -> JSONValue {
        guard let value = members[name] else { throw PipelineError("\(at): missing field '\(name)'") }
        return value
    }

    static func string(_ value: JSONValue, at: String) throws -> String {
        guard case .string(let text) = value else { throw PipelineError("\(at): expected a string") }
        return text
    }

    static func bool(_ value: JSONValue, at: String) throws -> Bool {
        guard case .bool(let flag) = value else { throw PipelineError("\(at): expected true or false") }
        return flag
    }

    static func positive(_ value: JSONValue, at: String) throws -> Int {
        guard case .number(let text) = value, let number = Int(text), number > 0 else {
            throw PipelineError("\(at): expected a whole number greater than 0")
        }
        return number
    }
}
