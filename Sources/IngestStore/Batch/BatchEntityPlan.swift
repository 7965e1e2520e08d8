import Foundation

/// An entity as the batch path writes it, on either store: its table, defaults, key,
/// conflict rule and required attributes. Each writer adds its statements (SQLite's in
/// `BatchInserter.Statements`, PostgreSQL's in `PostgresBatchWriter.Statements`).
// A class: rows reach their plan once each, and a struct would be copied (its strings
// and arrays retained) every time.
package final class BatchEntityPlan: Sendable {
    let info: EntityInfo
    /// The model's defaults, as cells.
    let defaultCells: [BatchInsertRequest.Cell]
    /// The key attribute's position (the entity's one uniqueness constraint), if any.
    let keyPosition: Int?
    /// How an `upsert` row meets a stored row with its key.
    let rule: ConflictRule
    /// 64-bit words of a row's given-mask (attributes, then to-ones).
    let maskWords: Int
    /// Positions of the attributes a row must have a value for.
    let requiredPositions: [Int]
    /// What the writers and requests read of this plan for every row.
    let shape: BatchEntityShape

    init(info: EntityInfo, defaultCells: [BatchInsertRequest.Cell], keyPosition: Int?, rule: ConflictRule) {
        self.info = info
        self.defaultCells = defaultCells
        self.keyPosition = keyPosition
        self.rule = rule
        maskWords = max(1, (info.attributes.count + info.toOneColumns.count + 63) / 64)
        requiredPositions = info.attributeRequired.indices.filter { info.attributeRequired[$0] }
        let lineage = info.lineagePositions
        shape = BatchEntityShape(attributes: info.attributeTypes.count, toOnes: info.toOneColumns.count, maskWords: maskWords,
                                 keyPosition: keyPosition, keyType: keyPosition.map { info.attributeTypes[$0] },
                                 checked: info.hasChecks, lineage: lineage.isEmpty ? nil : (lineage[0], lineage[1], lineage[2]))
    }

    /// Whether the batch path can write `entity`: at most one uniqueness constraint, of
    /// one attribute (the key it upserts on), and no to-one relationship whose inverse is also to-one
    /// (those keep a column on both sides), no member of an ordered to-many, and no entity of a hierarchy (its table holds
    /// other entities' rows too, told apart by `_entity`, which the batch statements do
    /// not write: contexts write those).
    package static func supports(_ entity: Entity, in model: Model) -> Bool {
        guard entity.parent == nil, model.subentities(of: entity.name).count == 1 else { return false }
        // A member of an ordered to-many keeps its position beside its link, which the
        // batch statements would leave behind when they change the link.
        guard !entity.relationships.contains(where: { relationship in
            !relationship.isToMany && model.entity(relationship.destination)?.relationship(relationship.inverse)?.isOrdered == true
        }) else { return false }
        guard entity.uniquenessConstraints.count <= 1, entity.uniquenessConstraints.allSatisfy({ $0.count == 1 }) else { return false }
        return entity.relationships.allSatisfy { relationship in
            relationship.isToMany || model.entity(relationship.destination)?.relationship(relationship.inverse)?.isToMany == true
        }
    }

    /// The batch path's plan of each entity of `schema` that `supports(_:in:)` accepts,
    /// writing stored objects by `rules`: shared by the SQLite and PostgreSQL writers.
    static func plans(schema: Schema, rules: [String: ConflictRule]) -> [BatchEntityPlan] {
        let model = schema.model
        var plans: [BatchEntityPlan] = []
        for entity in model.entities where Self.supports(entity, in: model) {
            let info = schema.entity(entity.name)!
            let defaults = entity.attributes.map { attribute -> BatchInsertRequest.Cell in
                switch attribute.defaultValue {
                case nil: .null
                case .int(let number)?: .int(number)
                case .bool(let flag)?: .int(flag ? 1 : 0)
                case .double(let number)?: .double(number)
                case .date(let date)?: .double(date.timeIntervalSinceReferenceDate)
                default: .null  // replaced below: kept as a value in each request
                }
            }
            let key = entity.uniquenessConstraints.first.map { constraint in info.attributeIndex[constraint[0]]! }
            plans.append(BatchEntityPlan(info: info, defaultCells: defaults, keyPosition: key, rule: rules[entity.name] ?? .update))
        }
        return plans
    }

}

/// What the batch path reads of an entity's plan for every row, in plain values. Writers
/// and requests keep these in arrays (`plans.map(\.shape)`): reading a plan (a class) and its
/// info for each row retained and released them, atomically, a few times a record, while
/// a worker's mapping and writing threads retained the same plans.
struct BatchEntityShape: Sendable {
    let attributes: Int
    let toOnes: Int
    /// 64-bit words of a row's given-mask (attributes, then to-ones).
    let maskWords: Int
    let keyPosition: Int?
    /// The key attribute's type, where there is a key.
    let keyType: AttributeType?
    /// Whether the entity has attribute checks (`EntityInfo.hasChecks`).
    let checked: Bool
    /// The lineage attributes' positions (run, chunk, record), if the entity has them.
    let lineage: (run: Int, chunk: Int, record: Int)?
}
