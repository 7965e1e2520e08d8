/// Per-row lineage: three integer attributes on every row an import writes, saying which
/// run, chunk and record last changed it (`"import": {"lineage": true}` in a pipeline).
///
/// They are attributes like any other (fetched, filtered, sorted, shown by `ingest query`),
/// with names no model may declare (a leading `_`), and two differences: an import's
/// writes do not count them as a change (a record that repeats a stored row field for
/// field leaves it, and its lineage, as it was), and only the importer sets them.
extension Model {
    /// The run that last changed the row (its number in `ingest status`).
    public static let lineageRun = "_ingest_run"
    /// The chunk of that run the record was in (1 is the first).
    public static let lineageChunk = "_ingest_chunk"
    /// The record's index in its chunk (0 is the first).
    public static let lineageRecord = "_ingest_record"
    /// The three lineage attributes, in the order rows hold them.
    public static let lineageAttributeNames = [lineageRun, lineageChunk, lineageRecord]

    static func isLineage(_ attribute: Attribute) -> Bool {
        lineageAttributeNames.contains(attribute.name) && attribute.type == .int64 && attribute.isOptional
            && attribute.defaultValue == nil && !attribute.isTransient
    }

    /// Whether the hierarchy of `entity` carries lineage.
    public func hasLineage(_ entity: String) -> Bool {
        self.entity(rootEntity(of: entity))?.attributes.contains { $0.name == Self.lineageRun } ?? false
    }

    /// The model with the lineage attributes added to the hierarchies of `entities` (at the
    /// end of each root's attributes, so every other attribute keeps its place).
    /// - Throws: `ModelError` when a to-one relationship's column would take a lineage
    ///   attribute's name (a relationship named `ingest_run`, say).
    public func addingLineage(to entities: some Sequence<String>) throws -> Model {
        let roots = Set(entities.map(rootEntity(of:)))
        let taken = Set(Self.lineageAttributeNames.map { $0.lowercased() })
        for entity in self.entities where roots.contains(rootEntity(of: entity.name)) {
            for relationship in entity.relationships where !relationship.isToMany && taken.contains("_" + relationship.name.lowercased()) {
                throw ModelError("relationship \(entity.name).\(relationship.name) keeps its link in a column named like a lineage attribute (\("_" + relationship.name)): rename it, or import without lineage")
            }
        }
        var changed = false
        let updated = self.entities.map { entity -> Entity in
            guard entity.parent == nil, roots.contains(entity.name) else { return entity }
            var entity = entity
            for name in Self.lineageAttributeNames where entity.attribute(name) == nil {
                entity.attributes.append(Attribute(name, .int64))
                changed = true
            }
            return entity
        }
        return changed ? Model(entities: updated) : self
    }
}
