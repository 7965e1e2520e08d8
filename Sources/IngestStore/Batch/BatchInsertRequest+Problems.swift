import Foundation

extension BatchInsertRequest {
    /// Why the record's rows cannot be written, or nil: a row that would be created (or,
    /// for the record's own object, written) lacks a required value, or holds a value that
    /// breaks its attribute's rules (`AttributeRules`), in the words a save's validation
    /// uses. (A value of the wrong type is caught as the request is built.)
    func problem(in range: Range<Int>, keys: [Value?], skipping: Set<Int> = [],
                 existing: (Int, Value) throws -> Int64?) throws -> String? {
        for rowIndex in range where skipping.isEmpty || !skipping.contains(rowIndex) {
            let row = rows[rowIndex]
            guard needsCheck(row) else { continue }
            let plan = entities[row.entity]
            if plan.info.hasChecks, let broken = try ruleProblem(row, plan, key: keys[rowIndex], existing: existing) { return broken }
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
                position == plan.keyPosition || info.isLineage(position) || cells[row.firstCell + position] == plan.defaultCells[position]
            }
            return "\(which): \(names) \(verb) required" + (onlyKey ? " (the record gives only its key)" : "")
        }
        return nil
    }

    /// Whether any row of `range` (but `skipping`) could have a problem: one lacks a
    /// required value, or its entity has checks. Most records have none, and this is told
    /// from plain integers, so a writer need not hand `problem(in:keys:skipping:existing:)`
    /// its arguments (retained, each of them) for every record.
    func mayHaveProblem(in range: Range<Int>, skipping: Set<Int> = []) -> Bool {
        for rowIndex in range where skipping.isEmpty || !skipping.contains(rowIndex) {
            if needsCheck(rows[rowIndex]) { return true }
        }
        return false
    }

    private func needsCheck(_ row: Row) -> Bool {
        let shape = shapes[row.entity]
        if shape.entity.checked { return true }
        for index in shape.required {
            if case .null = cells[row.firstCell + requiredPositions[index]] { return true }
        }
        return false
    }

    /// The first value of `row` that breaks its attribute's rules, as a save's validation
    /// says it (`Book b2: title: is 45 characters long, more than the maximum length 40`),
    /// or nil. A row named by key alone that meets a stored row writes nothing: not checked.
    private func ruleProblem(_ row: Row, _ plan: BatchEntityPlan, key given: Value?,
                             existing: (Int, Value) throws -> Int64?) throws -> String? {
        let info = plan.info
        var found: (name: String, message: String)?
        for (position, check) in info.attributeChecks.enumerated() {
            guard let check, let value = value(cells[row.firstCell + position], type: info.attributeTypes[position]),
                  let broken = check.problem(value) else { continue }
            found = (info.attributeNames[position], broken.message)
            break
        }
        guard let found else { return nil }
        let key = given ?? plan.keyPosition.flatMap { value(cells[row.firstCell + $0], type: info.attributeTypes[$0]) }
        if let key, row.mode == .findOrCreate || plan.rule == .keepExisting, try existing(row.entity, key) != nil { return nil }
        return "\(key.map { "\(info.name) \($0)" } ?? "a new \(info.name)"): \(found.name): \(found.message)"
    }
}
