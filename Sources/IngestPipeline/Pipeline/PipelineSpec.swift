public import Foundation
public import IngestJSON
public import IngestStore

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
    /// The most workers a run may have: threads with a context and a connection each.
    public static let maxWorkers = 256

    /// Entities the pipeline writes without a uniqueness key: each record makes new
    /// objects of them, so importing the same records again adds them again.
    public var keylessEntities: [String] { mappings.filter { $0.value.key.isEmpty }.map(\.key).sorted() }

    public var model: Model
    public var feed: FeedShape
    /// NDJSON: a malformed line is rejected as a record and the import goes on
    /// (`"feed": {"ndjson": true, "malformedLines": "reject"}`), instead of stopping the feed there.
    public var rejectsMalformedLines = false
    /// How the feed is read, for the splitter.
    public var feedOptions: FeedOptions {
        var options = FeedOptions(shape: feed)
        options.rejectsMalformedLines = rejectsMalformedLines
        return options
    }
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
    /// Whether the import's saves record history (`"import": {"history": false}` turns it off).
    public var history = true
    /// Whether each row the import writes records the run, chunk and record that last
    /// changed it (`"import": {"lineage": true}`): the model then has the lineage attributes
    /// (`Model.lineageAttributeNames`) on every mapped entity's hierarchy.
    public private(set) var lineage = false
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
        /// The zone of local times: dates whose text gives no offset. nil: UTC.
        public var timeZone: TimeZone?
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
        /// A to-one object made of members beside the relationship's, not nested:
        /// `{"fields": {"name": "country", "code": "alpha_two_code"}}` reads
        /// `{"country": "Portugal", "alpha_two_code": "PT"}` as the destination object
        /// `{"name": "Portugal", "code": "PT"}`, which the destination's mapping then maps.
        /// (`from` is then the first field's path.)
        public var fields: [RelatedField]? = nil
        /// A to-many given as an object keyed by codes or ids (`"languages": {"por":
        /// "Portuguese", …}`): each member is a related object, its name under `@key` and
        /// its value's members (or a plain value under `@value`) beside it.
        public var keyed = false
    }

    /// One member of a related object made of its parent's members (`RelationshipMapping.fields`).
    public struct RelatedField: Sendable, Equatable {
        /// The member's name in the object the destination's mapping reads.
        public var name: String
        /// Where its value is, in the parent object.
        public var from: JSONPath
    }

    /// Reads and checks a pipeline file.
    /// - Throws: `PipelineError` naming the file, the place in it and the problem.
    public static func load(path: String) throws -> PipelineSpec {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw PipelineError(kind: .unreadable, file: path, place: nil,
                                problem: "cannot read the pipeline file (\(error.localizedDescription))")
        }
        do {
            return try parse(try embeddingModelFile(Array(data), pipelinePath: path))
        } catch var error as PipelineError {
            error.file = path
            throw error
        }
    }

    /// The pipeline file's text with the model file it names (`"model": "Photos.xcdatamodeld"`)
    /// embedded, as runs keep it (a process on another machine has no such file); the
    /// file's text as it is when it embeds its model.
    /// - Throws: `PipelineError` when the file or the model file cannot be read.
    public static func resolvedText(path: String) throws -> [UInt8] {
        do {
            return try embeddingModelFile(FileOps.readFile(path), pipelinePath: path)
        } catch var error as PipelineError {
            error.file = path
            throw error
        } catch {
            throw PipelineError(kind: .unreadable, file: path, place: nil, problem: "cannot read the pipeline file (\(error))")
        }
    }

    /// The model file a pipeline's text names (`"model": "Photos.xcdatamodeld"`), or nil
    /// when it embeds its model.
    public static func namedModelFile(_ bytes: [UInt8]) -> String? {
        guard case .object(let members)? = try? JSONValue.parse(bytes),
              case .string(let name)? = members.first(where: { $0.key == "model" })?.value else { return nil }
        return name
    }

    /// `bytes` with a named model file read (relative to the pipeline's directory) and put in
    /// its place; `bytes` unchanged when the model is embedded (or the text is not JSON:
    /// `parse` says why).
    @_optimize(none)
    static func embeddingModelFile(_ bytes: [UInt8], pipelinePath: String) throws -> [UInt8] {
        guard case .object(var members)? = try? JSONValue.parse(bytes),
              let index = members.firstIndex(where: { $0.key == "model" }), case .string(let name) = members[index].value else { return bytes }
        let file = name.hasPrefix("/") ? URL(fileURLWithPath: name)
            : URL(fileURLWithPath: pipelinePath).deletingLastPathComponent().appendingPathComponent(name)
        let model: Model
        do {
            switch file.pathExtension {
            case "xcdatamodeld", "xcdatamodel":
                model = try Model.load(xcdatamodel: file)
            default:
                guard let data = FileManager.default.contents(atPath: file.path) else {
                    throw PipelineError(at: "pipeline.model", "cannot read the model file \(file.path)")
                }
                model = try Model.load(json: data, strict: true)
            }
        } catch let error as PipelineError {
            throw error
        } catch let error as ModelError {
            throw PipelineError(at: "pipeline.model", "\(file.path): \(error.message)")
        } catch {
            throw PipelineError(at: "pipeline.model", "\(error)")
        }
        let embedded = try JSONValue.parse(Array(model.jsonData()))
        members[index] = JSONMember("model", embedded)
        return Array(JSONValue.object(members).description.utf8)
    }

    /// Parses a pipeline from its JSON text.
    /// - Throws: `PipelineError`.
    /// `strict: false` reads a pipeline a store kept (a PostgreSQL run's, one to evolve) as
    /// the version that kept it did: its model's unknown fields are left alone.
    @_optimize(none)
    public static func parse(_ bytes: [UInt8], strict: Bool = true) throws -> PipelineSpec {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch let error as FeedError {
            throw PipelineError(at: nil, "not valid JSON: \(error.message) at \(error.position)", kind: .notJSON)
        }
        let top = try Fields(root, at: "pipeline", allowed: ["model", "feed", "record", "mappings", "import"])
        var model: Model
        if case .string(let name)? = top.optional("model") {
            throw PipelineError(at: "pipeline.model", "names a model file (\(name)), which only a pipeline read from its file can load")
        }
        do {
            model = try Model.load(json: Data(try top.required("model").description.utf8), strict: strict)
        } catch let error as ModelError {
            throw PipelineError(at: "pipeline.model", "\(error.message)")
        } catch let error as PipelineError {
            throw error
        } catch {
            throw PipelineError(at: "pipeline.model", "\(error)")
        }

        // The lineage attributes are the importer's to add and to set, never a model's own.
        for entity in model.entities {
            for attribute in entity.declaredAttributes where Model.lineageAttributeNames.contains(attribute.name) {
                throw PipelineError(at: "pipeline.model", "attribute \(entity.name).\(attribute.name): names starting with '_' are reserved (\(attribute.name) is a lineage attribute, which \"import\": {\"lineage\": true} adds)")
            }
        }
        var lineage = false
        if case .object(let options)? = top.optional("import"), let value = options.last(where: { $0.key == "lineage" })?.value {
            guard case .bool(let flag) = value else { throw PipelineError(at: "pipeline.import.lineage", "expected true or false, found \(value)") }
            lineage = flag
        }
        if lineage {
            // Before the mappings are read: they find attributes by their place in the model.
            guard case .object(let members)? = top.optional("mappings") else { throw PipelineError(at: "pipeline.mappings", "expected an object of entity mappings") }
            do {
                model = try model.addingLineage(to: members.map(\.key).filter { model.entity($0) != nil })
            } catch let error as ModelError {
                throw PipelineError(at: "pipeline.import.lineage", error.message)
            }
        }

        var shape = FeedShape.array
        var form = RecordForm.objects
        var rejectsMalformedLines = false
        if let feedValue = top.optional("feed") {
            let feed = try Fields(feedValue, at: "pipeline.feed", allowed: ["recordsAt", "ndjson", "keyed", "rows", "values", "malformedLines"])
            let recordsAt = try feed.optional("recordsAt").map { try Fields.string($0, at: "pipeline.feed.recordsAt") }
            let ndjson = try feed.optional("ndjson").map { try Fields.bool($0, at: "pipeline.feed.ndjson") } ?? false
            let keyed = try feed.optional("keyed").map { try Fields.bool($0, at: "pipeline.feed.keyed") } ?? false
            if recordsAt != nil && ndjson { throw PipelineError(at: "pipeline.feed", "recordsAt and ndjson exclude each other") }
            if keyed && ndjson { throw PipelineError(at: "pipeline.feed", "keyed and ndjson exclude each other") }
            var keys: [String] = []
            if let recordsAt {
                guard case .keyPath(let path)? = FeedShape.recordsAt(recordsAt) else { throw PipelineError(at: "pipeline.feed.recordsAt", "'\(recordsAt)' is not a key path") }
                keys = path
                shape = .keyPath(path)
            } else if ndjson {
                shape = .ndjson
            }
            if keyed { shape = .keyed(keys) }
            switch feed.optional("malformedLines") {
            case nil, .string("stop")?: break
            case .string("reject")?:
                guard ndjson else { throw PipelineError(at: "pipeline.feed.malformedLines", "only NDJSON lines can be rejected one by one (a malformed array stops the feed)") }
                rejectsMalformedLines = true
            default: throw PipelineError(at: "pipeline.feed.malformedLines", "expected \"stop\" (the default: the feed stops at the first malformed line) or \"reject\" (the line is rejected as a record and the import goes on)")
            }
            switch feed.optional("rows") {
            case nil: break
            case .string("header")?: form = .rows(columns: nil)
            case .array(let names)?:
                form = .rows(columns: try names.map { try Fields.string($0, at: "pipeline.feed.rows") })
            default: throw PipelineError(at: "pipeline.feed.rows", "expected \"header\" (the first row names the columns) or a list of column names")
            }
            if try feed.optional("values").map({ try Fields.bool($0, at: "pipeline.feed.values") }) == true {
                guard form == .objects else { throw PipelineError(at: "pipeline.feed", "rows and values exclude each other") }
                form = .values
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
                throw PipelineError(at: "pipeline.record.entities", "expected an object from field values to entity names")
            }
            let otherwise = try record.optional("otherwise").map { try Fields.string($0, at: "pipeline.record.otherwise") }
            var candidates = Array(Set(table.values)).sorted()
            if let otherwise, !candidates.contains(otherwise) { candidates.append(otherwise) }
            if table.isEmpty {
                // Values name entities themselves: any mapped entity may be a record.
                candidates = model.entities.map(\.name).filter { name in (try? top.required("mappings"))?[name] != nil }
            }
            for name in candidates where model.entity(name) == nil {
                throw PipelineError(at: "pipeline.record", "the model has no entity '\(name)'")
            }
            guard let first = otherwise ?? candidates.first else { throw PipelineError(at: "pipeline.record", "no entity to choose from") }
            recordEntity = first
            discriminator = Discriminator(field: field, entities: table, otherwise: otherwise, candidates: candidates)
        } else {
            recordEntity = try Fields.string(recordValue, at: "pipeline.record")
            guard model.entity(recordEntity) != nil else {
                throw PipelineError(at: "pipeline.record", "the model has no entity '\(recordEntity)'")
            }
        }
        let mappingsValue = try top.required("mappings")
        guard case .object(let members) = mappingsValue else { throw PipelineError(at: "pipeline.mappings", "expected an object of entity mappings") }
        var mappings: [String: EntityMapping] = [:]
        for member in members {
            mappings[member.key] = try entityMapping(member.key, member.value, model: model)
        }
        for mapping in mappings.values.sorted(by: { $0.entity < $1.entity }) {
            for name in mapping.attributes.map(\.attribute) + mapping.key where Model.lineageAttributeNames.contains(name) {
                throw PipelineError(at: "pipeline.mappings.\(mapping.entity)", "\(name) is a lineage attribute: the importer sets it, no record does")
            }
        }
        for entity in discriminator?.candidates ?? [recordEntity] where mappings[entity] == nil {
            throw PipelineError(at: "pipeline.mappings", "no mapping for the record entity '\(entity)'")
        }
        for mapping in mappings.values.sorted(by: { $0.entity < $1.entity }) {
            let entity = model.entity(mapping.entity)!
            if entity.isAbstract {
                let subentities = model.subentities(of: entity.name, includingItself: false)
                throw PipelineError(at: "pipeline.mappings.\(entity.name)", "\(entity.name) is abstract, so no record becomes one: map its subentities ("
                    + (subentities.isEmpty ? "it has none" : subentities.joined(separator: ", ")) + ") and choose among them with \"record\": {\"by\": …}")
            }
            for relationship in mapping.relationships {
                let destination = entity.relationship(relationship.relationship)!.destination
                guard let target = mappings[destination] else {
                    throw PipelineError(at: "pipeline.mappings.\(mapping.entity).relationships.\(relationship.relationship)", "\(destination) has no mapping")
                }
                guard !target.key.isEmpty else {
                    throw PipelineError(at: "pipeline.mappings.\(destination)", "related objects are found or created by key, and \(destination) has none (add \"key\" or a uniqueness constraint)")
                }
            }
        }

        var chunkSize = SplitOptions.defaultChunkSize
        var workers: Int?
        var saveEvery = 1_000
        var history = true
        if let importValue = top.optional("import") {
            // `lineage` was read with the model, above.
            let options = try Fields(importValue, at: "pipeline.import", allowed: ["chunkSize", "workers", "saveEvery", "history", "lineage"])
            chunkSize = try options.optional("chunkSize").map { try Fields.positive($0, at: "pipeline.import.chunkSize") } ?? chunkSize
            workers = try options.optional("workers").map { try Fields.positive($0, at: "pipeline.import.workers") }
            if let workers, workers > Self.maxWorkers {
                throw PipelineError(at: "pipeline.import.workers", "at most \(Self.maxWorkers) (each worker is a thread with its own context and connection)")
            }
            saveEvery = try options.optional("saveEvery").map { try Fields.positive($0, at: "pipeline.import.saveEvery") } ?? saveEvery
            if let value = options.optional("history") {
                guard case .bool(let flag) = value else { throw PipelineError(at: "pipeline.import.history", "expected true or false, found \(value)") }
                history = flag
            }
        }
        let hash = SHA256Digest.hex(Array(root.description.utf8))
        var spec = PipelineSpec(model: model, feed: shape, recordEntity: recordEntity, mappings: mappings,
                                chunkSize: chunkSize, workers: workers, saveEvery: saveEvery, hash: hash)
        spec.recordForm = form
        spec.rejectsMalformedLines = rejectsMalformedLines
        spec.history = history
        spec.lineage = lineage
        spec.discriminator = discriminator
        return spec
    }
}

/// A pipeline file that cannot be used, with the place in it.
public struct PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The file cannot be read.
        case unreadable
        /// The file is not JSON.
        case notJSON
        /// The model in it is not a valid model.
        case invalidModel
        /// A field of the file is missing, unknown or wrong (`place` says which).
        case invalidField
    }

    public var kind: Kind
    /// The pipeline file, when it was read from one.
    public var file: String?
    /// Where in the file: a dotted path such as `pipeline.mappings.Photo.attributes.views`.
    public var place: String?
    /// What is wrong there.
    public var problem: String

    /// An error read from its text, which starts with its place (`pipeline.feed.rows:
    /// expected …`), as older code and tests write them; Ingest itself says the place and
    /// the problem apart (`init(at:_:kind:)`).
    public init(_ message: String) {
        if message.hasPrefix("pipeline"), let colon = message.range(of: ": ") {
            place = String(message[..<colon.lowerBound])
            problem = String(message[colon.upperBound...])
        } else {
            problem = message
        }
        kind = place == "pipeline.model" ? .invalidModel : message.hasPrefix("not valid JSON") ? .notJSON : .invalidField
    }

    /// The problem at `place` (nil: the pipeline as a whole), of `kind`, by default
    /// `.invalidModel` at `pipeline.model` and `.invalidField` elsewhere.
    init(at place: String?, _ problem: String, kind: Kind? = nil) {
        self.init(kind: kind ?? (place == "pipeline.model" ? .invalidModel : .invalidField), file: nil, place: place, problem: problem)
    }

    init(kind: Kind, file: String?, place: String?, problem: String) {
        self.kind = kind
        self.file = file
        self.place = place
        self.problem = problem
    }

    /// `FILE: PLACE: PROBLEM`, the parts there are.
    public var message: String { [file, place, problem].compactMap { $0 }.joined(separator: ": ") }
    public var description: String { message }
}

