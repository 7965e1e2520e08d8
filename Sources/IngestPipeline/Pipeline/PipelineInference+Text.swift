import IngestJSON
import IngestStore

extension PipelineInference.Builder {
    /// The pipeline as JSON text, pretty-printed for editing.
    @_optimize(none)
    func pipelineText(root: PipelineInference.Draft, shape: FeedShape, form: RecordForm) -> String {
        func string(_ text: String) -> JSONValue { .string(text) }
        var entities: [JSONValue] = []
        var mappings: [JSONMember] = []
        for draft in drafts {
            var attributes: [JSONValue] = []
            for attribute in draft.attributes {
                var members = [JSONMember("name", string(attribute.name)), JSONMember("type", string(attribute.type.rawValue))]
                if draft.key.contains(attribute.from) { members.append(JSONMember("optional", .bool(false))) }
                attributes.append(.object(members))
            }
            var entity = [JSONMember("name", string(draft.name)), JSONMember("attributes", .array(attributes))]
            if !draft.relationships.isEmpty {
                entity.append(JSONMember("relationships", .array(draft.relationships.map { relationship in
                    var members = [JSONMember("name", string(relationship.name)), JSONMember("destination", string(relationship.destination)),
                                   JSONMember("inverse", string(relationship.inverse))]
                    if relationship.toMany { members.append(JSONMember("toMany", .bool(true))) }
                    return .object(members)
                })))
            }
            let keyNames = draft.key.compactMap { key in draft.attributes.first { $0.from == key }?.name }
            if !keyNames.isEmpty, keyNames.count == draft.key.count {
                entity.append(JSONMember("unique", .array([.array(keyNames.map(string))])))
            }
            entities.append(.object(entity))
            var mapped: [JSONMember] = []
            for attribute in draft.attributes {
                if attribute.dates == nil && !attribute.json {
                    mapped.append(JSONMember(attribute.name, string(attribute.from)))
                } else {
                    var members = [JSONMember("from", string(attribute.from))]
                    if let dates = attribute.dates { members.append(JSONMember("dates", .array(dates.map(string)))) }
                    if attribute.json { members.append(JSONMember("json", .bool(true))) }
                    mapped.append(JSONMember(attribute.name, .object(members)))
                }
            }
            var mapping = [JSONMember("attributes", .object(mapped))]
            let related = draft.relationships.compactMap { relationship in
                relationship.from.map { from in
                    JSONMember(relationship.name, relationship.keyed ? .object([JSONMember("from", string(from)), JSONMember("keyed", .bool(true))]) : string(from))
                }
            }
            if !related.isEmpty { mapping.append(JSONMember("relationships", .object(related))) }
            mappings.append(JSONMember(draft.name, .object(mapping)))
        }
        var feed: [JSONMember] = []
        switch shape {
        case .array: break
        case .ndjson: feed.append(JSONMember("ndjson", .bool(true)))
        case .keyPath(let keys): feed.append(JSONMember("recordsAt", string(keys.joined(separator: "."))))
        case .keyed(let keys):
            if !keys.isEmpty { feed.append(JSONMember("recordsAt", string(keys.joined(separator: ".")))) }
            feed.append(JSONMember("keyed", .bool(true)))
        }
        switch form {
        case .objects: break
        case .rows(let columns?): feed.append(JSONMember("rows", .array(columns.map(string))))
        case .rows(nil): feed.append(JSONMember("rows", string("header")))
        case .values: feed.append(JSONMember("values", .bool(true)))
        }
        let pipeline = JSONValue.object([
            JSONMember("model", .object([JSONMember("entities", .array(entities))])),
            JSONMember("feed", .object(feed)),
            JSONMember("record", string(root.name)),
            JSONMember("mappings", .object(mappings)),
        ])
        return PrettyJSON.text(pipeline) + "\n"
    }
}

/// JSON for people: nested objects indented, short arrays and objects kept on one line.
enum PrettyJSON {
    static func text(_ value: JSONValue, indent: String = "") -> String {
        let compact = value.description
        if compact.count + indent.count <= 100 { return compact }
        let inner = indent + "  "
        switch value {
        case .object(let members):
            return "{\n" + members.map { inner + JSONValue.string($0.key).description + ": " + text($0.value, indent: inner) }
                .joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let items):
            return "[\n" + items.map { inner + text($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return compact
        }
    }
}
