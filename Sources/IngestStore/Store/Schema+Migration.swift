/// The additive migration both stores make when a store is opened with a model that adds
/// to the one it holds: new entities, optional attributes and relationships. It is what a
/// pipeline that follows its feed (`import --evolve`) needs, and it never rewrites a row.
extension Schema {
    /// What moving a store from `old` to this model takes.
    struct Migration {
        /// Statements that add what this model adds, in `dialect`'s words.
        var statements: [String] = []
        /// What this model changes or removes, which an additive migration cannot make; a
        /// store is not migrated unless this is empty.
        var differences: [String] = []
    }

    @_optimize(none)
    func migration(from old: Model, dialect: SQLDialect) -> Migration {
        let postgres = dialect == .postgres
        var migration = Migration()
        for entity in old.entities where model.entity(entity.name) == nil {
            migration.differences.append("entity \(entity.name) was removed")
        }
        for entity in model.entities {
            let info = self.entity(entity.name)!
            guard let before = old.entity(entity.name) else {
                if let parent = entity.parent {
                    migration.differences.append("entity \(entity.name) was added below \(parent): a hierarchy's table is not migrated in place")
                }
                migration.statements += info.createStatements(dialect)
                continue
            }
            if before.parent != entity.parent || before.isAbstract != entity.isAbstract {
                migration.differences.append("entity \(entity.name)'s parent or abstract flag changed")
                continue
            }
            for attribute in before.attributes {
                guard let now = entity.attribute(attribute.name) else {
                    migration.differences.append("attribute \(entity.name).\(attribute.name) was removed")
                    continue
                }
                if now.type != attribute.type {
                    migration.differences.append("attribute \(entity.name).\(attribute.name) changed type from \(attribute.type.rawValue) to \(now.type.rawValue)")
                } else if now != attribute {
                    migration.differences.append("attribute \(entity.name).\(attribute.name) changed (optional, default or indexed)")
                }
            }
            // Declared ones only: a subentity inherits its parent's new column, made once.
            for attribute in entity.declaredAttributes where before.attribute(attribute.name) == nil {
                guard attribute.isOptional else {
                    migration.differences.append("required attribute \(entity.name).\(attribute.name) was added")
                    continue
                }
                let type = postgres ? attribute.type.postgresType : attribute.type.sqlType
                migration.statements.append("ALTER TABLE \(info.table) ADD COLUMN \(quoted(attribute.name)) \(type)")
                if attribute.isIndexed {
                    migration.statements.append("CREATE INDEX \(quoted("_index_\(entity.name)_\(attribute.name)")) ON \(info.table) (\(EntityInfo.indexedColumn(attribute, dialect)))")
                }
            }
            for relationship in before.relationships where entity.relationship(relationship.name) != relationship {
                migration.differences.append("relationship \(entity.name).\(relationship.name) was removed or changed")
            }
            for relationship in entity.declaredRelationships where before.relationship(relationship.name) == nil {
                let info = info.relationships[info.relationshipIndex[relationship.name]!]
                switch info.storage {
                case .column(let column):
                    migration.statements.append("ALTER TABLE \(self.entity(entity.name)!.table) ADD COLUMN \(quoted(column)) \(postgres ? "bigint" : "INTEGER")")
                    migration.statements.append("CREATE INDEX \(quoted("_index_\(entity.name)\(column)")) ON \(self.entity(entity.name)!.table) (\(quoted(column)))")
                    if model.entity(relationship.destination)?.relationship(relationship.inverse)?.isOrdered == true {
                        migration.statements.append("ALTER TABLE \(self.entity(entity.name)!.table) ADD COLUMN \(quoted(column + "_order")) \(postgres ? "bigint" : "INTEGER")")
                    }
                case .joinTable(let table, "_a", _):
                    let integer = postgres ? "bigint" : "INTEGER"
                    let orders = (relationship.isOrdered ? ", \"_a_order\" \(integer)" : "")
                        + (model.entity(relationship.destination)?.relationship(relationship.inverse)?.isOrdered == true ? ", \"_b_order\" \(integer)" : "")
                    migration.statements.append("CREATE TABLE \(quoted(table)) (\"_a\" \(integer) NOT NULL, \"_b\" \(integer) NOT NULL\(orders), PRIMARY KEY (\"_a\", \"_b\"))"
                                                + (postgres ? "" : " WITHOUT ROWID"))
                    migration.statements.append("CREATE INDEX \(quoted(table + "_b")) ON \(quoted(table)) (\"_b\", \"_a\")")
                default:
                    break
                }
            }
            if entity.uniquenessConstraints != before.uniquenessConstraints {
                migration.differences.append("uniqueness constraints of \(entity.name) changed")
            }
        }
        return migration
    }
}
