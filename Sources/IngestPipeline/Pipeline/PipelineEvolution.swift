package import IngestJSON
import IngestStore

/// A pipeline that follows its feed: the fields a newer feed has and the pipeline does not
/// map become optional attributes, with the types inferred from a sample, and each one is
/// explained (sqlite-utils' `--alter`, dlt's schema evolution, with the reasons said).
///
/// It adds and never changes: a field whose type changed (whole numbers that became
/// fractions) is reported, not converted, and records that no longer fit are rejected with
/// their reason. New related entities are reported for a hand edit. The store then takes
/// the new model by its additive migration (SQLite and PostgreSQL alike).
package enum PipelineEvolution {
    package struct Evolution: Sendable {
        /// The pipeline's text with the additions (the text it was given when there are none).
        package var text: String
        package var spec: PipelineSpec
        /// One line per attribute added: where it reads, its type, and what the sample showed.
        package var added: [String] = []
        /// Fields the pipeline maps whose values in the sample its type cannot hold.
        package var typeChanges: [String] = []
        /// What the sample has that evolving does not add (new related entities), and
        /// unmapped members the store counted that the sample lacks.
        package var notAdded: [String] = []

        /// Every line, in the order a user reads them.
        package var report: [String] {
            added.map { "added " + $0 } + typeChanges.map { "type changed: " + $0 } + notAdded.map { "not added: " + $0 }
        }
    }

    /// Evolves `pipeline` (its text) by what `inference` found in a newer feed. `unmapped`
    /// is what the store counted that the pipeline does not map, to say which of those
    /// the sample missed.
    /// - Throws: `PipelineError` when the pipeline's text is not a pipeline.
    @_optimize(none)
    package static func evolve(_ pipeline: [UInt8], by inference: PipelineInference.Inference,
                              unmapped: MemberCensus = MemberCensus()) throws -> Evolution {
        let old = try PipelineSpec.parse(pipeline, strict: false)
        var root = try JSONValue.parse(pipeline)
        let inferredRoot = try JSONValue.parse(Array(inference.text.utf8))
        let new = inference.spec
        var evolution = Evolution(text: String(decoding: pipeline, as: UTF8.self), spec: old)
        var addedPaths: Set<String> = []
        var matched: [(inferred: String, old: String)] = [(new.recordEntity, old.recordEntity)]
        var seen: Set<String> = [new.recordEntity]
        var index = 0
        while index < matched.count {
            let (inferredName, oldName) = matched[index]
            index += 1
            guard let inferredMapping = new.mappings[inferredName], let oldEntity = old.model.entity(oldName) else { continue }
            let oldMapping = old.mappings[oldName]
            let readPaths = paths(read: oldMapping)
            for relationship in inferredMapping.relationships {
                let path = relationship.from.description
                let destination = new.model.entity(inferredName)!.relationship(relationship.relationship)!.destination
                if let oldRelationship = oldMapping?.relationships.first(where: { $0.from.description == path }),
                   let oldDestination = oldEntity.relationship(oldRelationship.relationship)?.destination {
                    if seen.insert(destination).inserted { matched.append((destination, oldDestination)) }
                } else if !reads(path, readPaths) {
                    evolution.notAdded.append("\(oldName) ← \(path): \(evidence(inference, inferredName, path) ?? "objects") (a related entity: add it to the pipeline by hand)")
                    addedPaths.insert(path)
                }
            }
            // Lowercased: names differing only in case clash as SQL column names do (found by
            // probing: `Id` beside a stored `id` made "duplicate property name 'Book.id'").
            var names = Set((oldEntity.attributes.map(\.name) + oldEntity.relationships.map(\.name)).map { $0.lowercased() })
            for attribute in inferredMapping.attributes {
                let path = attribute.from.description
                let inferredType = new.model.entity(inferredName)!.attribute(attribute.attribute)!.type
                if let mapped = oldMapping?.attributes.first(where: { $0.from.description == path }) {
                    let oldType = oldEntity.attribute(mapped.attribute)!.type
                    if !holds(oldType, inferredType) {
                        evolution.typeChanges.append("\(oldName).\(mapped.attribute) ← \(path) is \(oldType.rawValue) in the pipeline, but the feed now has \(evidence(inference, inferredName, path) ?? inferredType.rawValue): not converted; records whose value is not \(article(oldType)) are rejected with the reason (to store the new type, import into a new store with the attribute's type changed)")
                    }
                    continue
                }
                guard !reads(path, readPaths) else { continue }
                var name = attribute.attribute
                var suffix = 2
                while names.contains(name.lowercased()) { name = attribute.attribute + String(suffix); suffix += 1 }
                names.insert(name.lowercased())
                let mapping = inferredRoot["mappings"]?[inferredName]?["attributes"]?[attribute.attribute] ?? .string(path)
                root = adding(name, type: inferredType, mapping: mapping, entity: oldName, to: root)
                evolution.added.append("\(oldName).\(name) ← \(path): \(evidence(inference, inferredName, path) ?? inferredType.rawValue); optional \(inferredType.rawValue)")
                addedPaths.insert(path)
            }
        }
        let recordReads = paths(read: old.mappings[old.recordEntity])
        for (path, records) in unmapped.ranked where path != MemberCensus.otherPaths && !reads(path, Array(addedPaths)) && !reads(path, recordReads) {
            evolution.notAdded.append("\(path): \(records) record(s) the store imported had it, but none of the \(inference.recordsRead) sampled did (pass a larger --sample, or map it by hand)")
        }
        guard !evolution.added.isEmpty else { return evolution }
        evolution.text = pretty(root) + "\n"
        evolution.spec = try PipelineSpec.parse(Array(evolution.text.utf8))
        return evolution
    }

    /// The paths a mapping reads, attributes and relationships.
    static func paths(read mapping: PipelineSpec.EntityMapping?) -> [String] {
        (mapping?.attributes.map(\.from.description) ?? []) + (mapping?.relationships.flatMap { $0.fields?.map(\.from.description) ?? [$0.from.description] } ?? [])
    }

    /// Whether a path is read by one of `paths`: the same, inside one, or holding one.
    static func reads(_ path: String, _ paths: [String]) -> Bool {
        paths.contains { $0 == path || path.hasPrefix($0 + ".") || path.hasPrefix($0 + "[") || $0.hasPrefix(path + ".") || $0.hasPrefix(path + "[") }
    }

    /// Whether an attribute of type `stored` takes every value the sample showed as `seen`.
    static func holds(_ stored: AttributeType, _ seen: AttributeType) -> Bool {
        switch (stored, seen) {
        case _ where stored == seen: true
        case (.string, _): true
        case (.double, .int64), (.double, .int32), (.double, .int16), (.int64, .int32), (.int64, .int16), (.int32, .int16): true
        default: false
        }
    }

    static func article(_ type: AttributeType) -> String {
        type == .int64 || type == .int32 || type == .int16 ? "an \(type.rawValue)" : "a \(type.rawValue)"
    }

    /// What the inference said it saw at `path` of `entity` (its report line, after the label).
    static func evidence(_ inference: PipelineInference.Inference, _ entity: String, _ path: String) -> String? {
        let label = "\(entity).\(path): "
        return inference.report.first { $0.hasPrefix(label) }.map { String($0.dropFirst(label.count)) }
    }

    /// `root` (a pipeline) with attribute `name` added to `entity`'s model and mapping.
    static func adding(_ name: String, type: AttributeType, mapping: JSONValue, entity: String, to root: JSONValue) -> JSONValue {
        let attribute = JSONValue.object([JSONMember("name", .string(name)), JSONMember("type", .string(type.rawValue))])
        return root.updating(["model", "entities"]) { entities in
            guard case .array(let items)? = entities else { return entities ?? .array([]) }
            return .array(items.map { item in
                guard item["name"]?.stringValue == entity else { return item }
                return item.updating(["attributes"]) { attributes in
                    if case .array(let list)? = attributes { return .array(list + [attribute]) }
                    return .array([attribute])
                }
            })
        }.updating(["mappings", entity, "attributes"]) { attributes in
            if case .object(let members)? = attributes { return .object(members + [JSONMember(name, mapping)]) }
            return .object([JSONMember(name, mapping)])
        }
    }

    /// Pipeline text as people write it: two-space indents, short objects and arrays on one line.
    @_optimize(none)
    static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let compact = value.description
        if !indent.isEmpty, compact.count + indent.count <= 100 { return compact }
        let inner = indent + "  "
        switch value {
        case .object(let members) where !members.isEmpty:
            return "{\n" + members.map { inner + JSONValue.string($0.key).description + ": " + pretty($0.value, indent: inner) }
                .joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let items) where !items.isEmpty:
            return "[\n" + items.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return compact
        }
    }
}

extension JSONValue {
    /// This object with the value at `path` (made as `{}` where missing) replaced by `change`'s.
    func updating(_ path: [String], _ change: (JSONValue?) -> JSONValue) -> JSONValue {
        guard let key = path.first else { return change(self) }
        guard case .object(var members) = self else { return self }
        if let index = members.lastIndex(where: { $0.key == key }) {
            members[index].value = path.count == 1 ? change(members[index].value) : members[index].value.updating(Array(path.dropFirst()), change)
        } else {
            members.append(JSONMember(key, path.count == 1 ? change(nil) : JSONValue.object([]).updating(Array(path.dropFirst()), change)))
        }
        return .object(members)
    }
}
