import Foundation

extension BatchInserter {
    /// An entity's batch statements in SQLite's words.
    struct Statements: Sendable {
        /// The upsert by the plan's rule; it changes nothing when the stored row already says it all.
        let insertSQL: String
        let findOrCreateSQL: String
        /// Under `reject`: a row when the stored row `?1` differs from the row's given attributes
        /// and links (none for a placeholder): a verdict per field in `differsColumns`, then
        /// the stored values of those fields.
        let differsSQL: String?
        /// The fields `differsSQL` compares, in its order.
        var differsColumns: [ComparedField] = []

        /// A field a `reject` comparison reads: an attribute (by position) or a to-one (by link).
        enum ComparedField: Sendable {
            case attribute(Int)
            case link(Int)
        }

        @_optimize(none)
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
            var fields: [ComparedField] = []
            if let constraint = info.uniquenessConstraints.first {
                let target = constraint.map(quoted).joined(separator: ", ")
                let placeholder = EntityInfo.placeholderColumn
                // A row named by key alone is made a placeholder, which the first record that
                // describes it fills (as `update` writes) whatever the rule, and unmarks.
                findOrCreate = info.insertSQL.replacingOccurrences(of: ") VALUES (", with: ", \(placeholder)) VALUES (")
                    .dropLast() + ", 1) ON CONFLICT (\(target)) DO NOTHING"
                let changing = columns.enumerated().filter { !constraint.contains(info.attributes.indices.contains($0.offset) ? info.attributes[$0.offset].name : "") }
                // A lineage attribute is written with the rest, but a row whose other fields are
                // all the same is left as it is: its lineage names the record that last changed it.
                let compared = changing.filter { !info.isLineage($0.offset) }
                let fill = changing.map { "\($1) = CASE WHEN \(given($0)) THEN excluded.\($1) ELSE \($1) END" } + ["\(placeholder) = NULL"]
                let isPlaceholder = "\(placeholder) IS NOT NULL"
                switch rule {
                case .update:
                    upsert += " ON CONFLICT (\(target)) DO UPDATE SET " + fill.joined(separator: ", ")
                        + " WHERE " + (compared.map { "(\(given($0)) AND \($1) IS NOT excluded.\($1))" } + [isPlaceholder]).joined(separator: " OR ")
                case .replace:
                    // A placeholder keeps the links others gave it: filled as `update` fills it.
                    let written = "(\(placeholder) IS NULL OR %GIVEN%)"
                    upsert += " ON CONFLICT (\(target)) DO UPDATE SET "
                        + (changing.map { "\($1) = CASE WHEN \(written.replacingOccurrences(of: "%GIVEN%", with: given($0))) THEN excluded.\($1) ELSE \($1) END" }
                           + ["\(placeholder) = NULL"]).joined(separator: ", ")
                        + " WHERE " + (compared.map { "\($1) IS NOT excluded.\($1)" } + [isPlaceholder]).joined(separator: " OR ")
                case .keepExisting, .reject:
                    upsert += " ON CONFLICT (\(target)) DO UPDATE SET " + fill.joined(separator: ", ") + " WHERE " + isPlaceholder
                }
                if rule == .reject {
                    // Attributes and to-ones the record gives: a link to another object changes the stored one too.
                    // A placeholder differs from nothing: the record fills it.
                    let compared = info.attributes.indices.filter { !constraint.contains(info.attributes[$0].name) && !info.isLineage($0) }
                    let conditions = compared.map { "(\(given($0)) AND \(quoted(info.attributes[$0].name)) IS NOT ?\($0 + 2))" }
                        + info.toOneColumns.indices.map { link in
                            let bit = info.attributes.count + link
                            return "(\(given(bit)) AND \(quoted(info.toOneColumns[link].column)) IS NOT ?\(bit + 2))"
                        }
                    // Each condition's verdict, then the stored values: the reason names the field.
                    let verdicts = conditions.isEmpty ? "0" : conditions.joined(separator: ", ")
                    let storedColumns = (compared.map { quoted(info.attributes[$0].name) } + info.toOneColumns.map { quoted($0.column) })
                    differs = "SELECT \(([verdicts] + storedColumns).joined(separator: ", ")) FROM \(info.table) WHERE \"_pk\" = ?1 AND \(placeholder) IS NULL AND ("
                        + (conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")) + ")"
                    fields = compared.map { .attribute($0) } + info.toOneColumns.indices.map { .link($0) }
                }
            }
            insertSQL = upsert
            findOrCreateSQL = findOrCreate
            differsSQL = differs
            differsColumns = fields
        }
    }
}
