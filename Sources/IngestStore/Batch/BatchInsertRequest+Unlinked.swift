extension BatchInsertRequest {
    /// Whether a row's object is in the store (or made earlier in the same save).
    enum RowPresence {
        case new
        case stored
        /// Stored, but only named by key so far: the first record that describes it fills it.
        case placeholder
    }

    /// The rows of a record (`range`) that are not written because nothing would link
    /// them: new objects related to an object whose links are not written (a stored one
    /// kept by `keepExisting`, one named by key alone, or one itself not written). Stored
    /// related objects are written by their own rule whatever their parent does, as on
    /// the object path. `stored(request, row)` says whether a row's key is in the store (or
    /// made earlier in the same save) and whether that object is a placeholder, which a
    /// record describing it fills whatever its rule (its links are written then); it is
    /// handed the request rather than capturing it,
    /// since a closure capturing the request copied it (ten arrays retained) every record.
    @inline(__always)
    func unlinkedNewRows(in range: Range<Int>, stored: (_ request: BatchInsertRequest, _ row: Int) throws -> RowPresence) rethrows -> Set<Int> {
        // Inlined, so that without a keepExisting rule (most imports) the closure is not even made.
        guard keepsStoredObjects else { return [] }
        return try rowsUnlinkedByKeepExisting(in: range, stored: stored)
    }

    private func rowsUnlinkedByKeepExisting(in range: Range<Int>,
                                            stored: (_ request: BatchInsertRequest, _ row: Int) throws -> RowPresence) rethrows -> Set<Int> {
        var parent = [Int](repeating: -1, count: range.count)
        for rowIndex in range {
            let row = rows[rowIndex]
            for link in 0..<entities[row.entity].info.toOneColumns.count {
                let target = Int(links[row.firstLink + link])
                if target >= 0 { parent[target - range.lowerBound] = rowIndex }
            }
        }
        var skipped = Set<Int>()
        var linksWritten = [Bool](repeating: true, count: range.count)
        // Rows are in pre-order: a parent comes before its children.
        for rowIndex in range {
            let row = rows[rowIndex]
            let up = parent[rowIndex - range.lowerBound]
            let linked = up < 0 || linksWritten[up - range.lowerBound]
            let presence = try stored(self, rowIndex)
            if !linked && presence == .new {
                skipped.insert(rowIndex)
                linksWritten[rowIndex - range.lowerBound] = false
                continue
            }
            linksWritten[rowIndex - range.lowerBound] = switch presence {
            case .new: true
            case .placeholder: row.mode == .upsert
            case .stored: row.mode == .upsert && entities[row.entity].rule != .keepExisting
            }
        }
        return skipped
    }

    /// The key a row gives (its entity's one uniqueness constraint), if any.
    func key(ofRow rowIndex: Int) -> Value? {
        let row = rows[rowIndex]
        let plan = entities[row.entity]
        guard let position = plan.keyPosition else { return nil }
        return value(cells[row.firstCell + position], type: plan.info.attributeTypes[position])
    }
}
