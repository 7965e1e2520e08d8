import Foundation

extension BatchInsertRequest {
    /// Why the record's rows cannot be written, or nil: a row that would be created (or,
    /// for the record's own object, written) lacks a required value. (A value of the
    /// wrong type is caught as the request is built.)
    func problem(in range: Range<Int>, keys: [Value?], skipping: Set<Int> = [],
                 existing: (Int, Value) throws -> Int64?) throws -> String? {
        for rowIndex in range where skipping.isEmpty || !skipping.contains(rowIndex) {
            let row = rows[rowIndex]
            let plan = entities[row.entity]
            var missing: [String] = []
            for position in plan.requiredPositions {
                if case .null = cells[row.firstCell + position] { missing.append(plan.info.attributeNames[position]) }
            }
            guard !missing.isEmpty else { continue }
            let info = plan.info
            let key = keys[rowIndex] ?? plan.keyPosition.flatMap { value(cells[row.firstCell + $0], type: info.attributeTypes[$0]) }
            if let key, try existing(row.entity, key) != nil {
                // A stored row keeps what the record does not give (unless replaced).
                if row.mode == .findOrCreate || plan.rule == .keepExisting { continue }
                if plan.rule != .replace {
                    missing = missing.filter { name in isGiven(row: row, bit: info.attributeIndex[name]!) }
                    if missing.isEmpty { continue }
                }
            }
            let names = missing.joined(separator: ", ")
            let which = key.map { "\(info.name) \($0)" } ?? info.name
            let verb = missing.count == 1 ? "is" : "are"
            let onlyKey = row.mode == .findOrCreate && (0..<info.attributeNames.count).allSatisfy { position in
                position == plan.keyPosition || cells[row.firstCell + position] == plan.defaultCells[position]
            }
            return "\(which): \(names) \(verb) required" + (onlyKey ? " (the record gives only its key)" : "")
        }
        return nil
    }
}
