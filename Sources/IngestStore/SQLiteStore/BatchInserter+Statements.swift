import GRDB

extension BatchInserter {
    /// An entity's batch statements in SQLite's words.
    struct Statements: Sendable {
        /// The upsert by the plan's rule; it changes nothing when the stored row already says it all.
        let insertSQL: String
        let findOrCreateSQL: String
        /// Under `reject`: 1 when the stored row `?1` differs from the row's given attributes and links.
        let differsSQL: String?

        init(_ plan: BatchEntityPlan) {
            let info = plan.info
            let rule = plan.rule
            let columns = info.attributes.map { quoted($0.name) } + info.toOneColumns.map { quoted($0.column) }
            // Parameters: ?1 the row number, then the cells and links, then the mask words.
            let firstMask = columns.count + 2
            func given(_ bit: Int) -> String { "((?\(firstMask + bit / 64) >> \(bit % 64)) & 1)" }
            var upsert = info.insertSQL
            var findOrCreate = info.insertSQL
            var differs: String?
            if let constraint = info.uniquenessConstraints.first {
                let target = constraint.map(quoted).joined(separator: ", ")
                findOrCreate += " ON CONFLICT (\(target)) DO NOTHING"
                let changing = columns.enumerated().filter { !constraint.contains(info.attributes.indices.contains($0.offset) ? info.attributes[$0.offset].name : "") }
                switch rule {
                case .update:
                    upsert += " ON CONFLICT (\(target)) DO UPDATE SET "
                        + changing.map { "\($1) = CASE WHEN \(given($0)) THEN excluded.\($1) ELSE \($1) END" }.joined(separator: ", ")
                        + " WHERE " + changing.map { "(\(given($0)) AND \($1) IS NOT excluded.\($1))" }.joined(separator: " OR ")
                case .replace:
                    upsert += " ON CONFLICT (\(target)) DO UPDATE SET "
                        + changing.map { "\($1) = excluded.\($1)" }.joined(separator: ", ")
                        + " WHERE " + changing.map { "\($1) IS NOT excluded.\($1)" }.joined(separator: " OR ")
                case .keepExisting, .reject:
                    upsert = findOrCreate
                }
                if changing.isEmpty { upsert = findOrCreate }
                if rule == .reject {
                    // Attributes and to-ones the record gives: a link to another object changes the stored one too.
                    let compared = info.attributes.indices.filter { !constraint.contains(info.attributes[$0].name) }
                    let conditions = compared.map { "(\(given($0)) AND \(quoted(info.attributes[$0].name)) IS NOT ?\($0 + 2))" }
                        + info.toOneColumns.indices.map { link in
                            let bit = info.attributes.count + link
                            return "(\(given(bit)) AND \(quoted(info.toOneColumns[link].column)) IS NOT ?\(bit + 2))"
                        }
                    differs = "SELECT 1 FROM \(info.table) WHERE \"_pk\" = ?1 AND (" + (conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")) + ")"
                }
            }
            insertSQL = upsert
            findOrCreateSQL = findOrCreate
            differsSQL = differs
        }
    }
}
