import Foundation

/// A key's text by its bytes.
struct TextKey: Hashable {
    let bytes: [UInt8]
    init(_ text: String) { bytes = Array(text.utf8) }
}

extension PostgresBatchWriter {
    /// One stored object a request writes: the rows of its key folded in record order.
    struct Folded {
        /// `u`: the key is stored (an UPDATE by `mask`); `i`: it is new (an INSERT).
        var op: UInt8
        /// The first record (index in the request) that names it.
        var record: Int
        var cells: [BatchInsertRequest.Cell]
        /// Each to-one's destination key, as text.
        var links: [String?]
        /// Bits (attributes, then to-ones) an UPDATE writes; for `i`, every bit is known.
        var mask: [UInt64]
    }

    /// Writes `request` (or its records `only`) in the connection's open transaction and
    /// returns what it wrote. Records that cannot be written are in `rejected`.
    /// - Throws: `PostgresError.server`: with SQLSTATE 40001 when another process made a
    ///   key this request was to create (roll back and try again), or the server's failure.
    public func write(_ request: BatchInsertRequest, only: [Int]? = nil) throws(PostgresError) -> BatchInserter.Result {
        var result = BatchInserter.Result()
        func reject(_ record: Int, _ reason: String) {
            result.rejected.append(BatchInserter.Rejection(record: request.records[record].number, reason: reason))
        }
        // Values PostgreSQL cannot hold are refused before anything is sent.
        var accepted: [Int] = []
        for record in only ?? Array(request.records.indices) {
            if let reason = request.records[record].invalid ?? nulProblem(request, record) { reject(record, reason) } else { accepted.append(record) }
        }

        // Each row's key, and the keys stored already.
        var rowKey = [String?](repeating: nil, count: request.rows.count)
        // Keys are told apart by their bytes, as PostgreSQL compares text (Swift's String
        // equality would make "é" and "e\u{301}" one key).
        var keys = Array(repeating: [TextKey: String](), count: plans.count)
        for record in accepted {
            for rowIndex in request.rowRange(ofRecord: record) {
                let row = request.rows[rowIndex]
                guard let position = plans[row.entity].keyPosition,
                      var key = keyText(request.cells[row.firstCell + position], request) else { continue }
                // PostgreSQL keeps dates to the microsecond: keys closer than that are one key there.
                if plans[row.entity].info.attributeTypes[position] == .date, let seconds = Double(key) {
                    key = Self.keyText((seconds * 1e6).rounded() / 1e6)
                }
                rowKey[rowIndex] = key
                keys[row.entity][TextKey(key)] = key
            }
        }
        var existing = Array(repeating: [TextKey: Int64](), count: plans.count)
        for (entity, entityKeys) in keys.enumerated() where !entityKeys.isEmpty {
            let found = try connection.execute(statements[entity].existing!, [Self.arrayLiteral(entityKeys.values)])
            for row in 0..<found.count { existing[entity][TextKey(found[row, 0]!)] = Int64(found[row, 1]!)! }
        }

        // A record whose new rows lack required values is rejected whole (as on SQLite).
        var created = Array(repeating: Set<TextKey>(), count: plans.count)
        var kept: [Int] = []
        // Rows nothing would link (new objects related to a kept one), as on SQLite.
        var unlinked = Set<Int>()
        let noKeys = [Value?](repeating: nil, count: request.rows.count)
        for record in accepted {
            let range = request.rowRange(ofRecord: record)
            let skipped = request.unlinkedNewRows(in: range) { rowIndex in
                guard let key = rowKey[rowIndex].map(TextKey.init) else { return false }
                let entity = request.rows[rowIndex].entity
                return existing[entity][key] != nil || created[entity].contains(key)
            }
            let reason = (try? request.problem(in: range, keys: noKeys, skipping: skipped) { entity, value in
                guard let key = Self.keyText(value).map(TextKey.init) else { return nil }
                return existing[entity][key] ?? (created[entity].contains(key) ? -1 : nil)
            }) ?? nil
            if let reason {
                reject(record, reason)
                continue
            }
            kept.append(record)
            unlinked.formUnion(skipped)
            for rowIndex in range where !skipped.contains(rowIndex) {
                if let key = rowKey[rowIndex].map(TextKey.init), existing[request.rows[rowIndex].entity][key] == nil {
                    created[request.rows[rowIndex].entity].insert(key)
                }
            }
        }

        // Fold each key's rows in record order; count what each record's own object becomes.
        var folded = Array(repeating: [Folded](), count: plans.count)
        var foldedIndex = Array(repeating: [TextKey: Int](), count: plans.count)
        // Records whose own object was stored: updated or unchanged, as the UPDATE says.
        var awaitingVerdict: [(entity: Int, record: Int)] = []
        for record in kept {
            let range = request.rowRange(ofRecord: record)
            // A record's rows fold last to first, the order the SQLite batch path writes them in.
            for rowIndex in range.reversed() where !unlinked.contains(rowIndex) {
                let row = request.rows[rowIndex]
                let plan = plans[row.entity]
                let own = rowIndex == range.lowerBound
                let links = (0..<plan.info.toOneColumns.count).map { number -> String? in
                    let target = Int(request.links[row.firstLink + number])
                    return target < 0 ? nil : rowKey[target]
                }
                let bits = plan.info.attributeNames.count + plan.info.toOneColumns.count
                guard let key = rowKey[rowIndex].map(TextKey.init) else {
                    folded[row.entity].append(Folded(op: UInt8(ascii: "i"), record: record, cells: cells(of: row, request),
                                                     links: links, mask: allBits(bits, plan)))
                    continue
                }
                if let at = foldedIndex[row.entity][key] {
                    let changed = apply(row, links: links, to: &folded[row.entity][at], request)
                    if own {
                        // Made earlier in this run: in this request, or stored since the run began.
                        if existing[row.entity][key].map({ $0 >= (firstRowOfRun[plan.info.name] ?? .max) }) ?? true { result.duplicates += 1 }
                        if changed { result.updated += 1 } else { result.unchanged += 1 }
                    }
                } else if let stored = existing[row.entity][key] {
                    var entry = Folded(op: UInt8(ascii: "u"), record: record, cells: cells(of: row, request), links: links,
                                       mask: Array(repeating: 0, count: plan.maskWords))
                    _ = apply(row, links: links, to: &entry, request)
                    foldedIndex[row.entity][key] = folded[row.entity].count
                    folded[row.entity].append(entry)
                    if own {
                        awaitingVerdict.append((row.entity, record))
                        if stored >= (firstRowOfRun[plan.info.name] ?? .max) { result.duplicates += 1 }
                    }
                } else {
                    foldedIndex[row.entity][key] = folded[row.entity].count
                    folded[row.entity].append(Folded(op: UInt8(ascii: "i"), record: record, cells: cells(of: row, request),
                                                     links: links, mask: allBits(bits, plan)))
                }
            }
        }

        // Stage, then write: destinations first, so links find their rows.
        var staged: [Int] = []
        for (entity, entries) in folded.enumerated() {
            let writes = entries.filter { $0.op == UInt8(ascii: "i") || $0.mask.contains { $0 != 0 } }
            guard !writes.isEmpty else { continue }
            try connection.copyIn(statements[entity].copy, data: copyText(writes, plan: plans[entity], request))
            staged.append(entity)
        }
        var updatedRecords = Array(repeating: Set<Int>(), count: plans.count)
        for entity in order where staged.contains(entity) {
            let plan = plans[entity]
            let entries = folded[entity]
            if let update = statements[entity].update, entries.contains(where: { $0.op == UInt8(ascii: "u") }) {
                let updated = try connection.execute(update)
                for row in 0..<updated.count { updatedRecords[entity].insert(Int(updated[row, 0]!)!) }
            }
            let inserts = entries.count { $0.op == UInt8(ascii: "i") }
            if inserts > 0 {
                let inserted = try connection.execute(statements[entity].insert).changed
                if plan.keyPosition != nil, inserted != inserts {
                    throw .server("another process stored \(inserts - inserted) \(plan.info.name) keys this batch was to create; try again",
                                  sqlState: "40001")
                }
                result.inserted[plan.info.name] = inserted
            }
        }
        if !staged.isEmpty {
            try connection.execute("TRUNCATE " + staged.map { quoted("_stage_\($0)") }.joined(separator: ", "))
        }
        for (entity, record) in awaitingVerdict {
            if updatedRecords[entity].contains(record) { result.updated += 1 } else { result.unchanged += 1 }
        }
        result.records = kept.count
        return result
    }

    // MARK: - Folding

    private func cells(of row: BatchInsertRequest.Row, _ request: BatchInsertRequest) -> [BatchInsertRequest.Cell] {
        Array(request.cells[row.firstCell..<row.firstCell + plans[row.entity].info.attributeNames.count])
    }

    private func allBits(_ count: Int, _ plan: BatchInserter.EntityPlan) -> [UInt64] {
        (0..<plan.maskWords).map { word in
            let left = count - word * 64
            return left >= 64 ? .max : (left <= 0 ? 0 : (1 << UInt64(left)) - 1)
        }
    }

    /// Applies `row` to `entry` by the plan's rule; returns whether a value it gives differs
    /// from what `entry` held (or is not known to be the same).
    private func apply(_ row: BatchInsertRequest.Row, links: [String?], to entry: inout Folded, _ request: BatchInsertRequest) -> Bool {
        let plan = plans[row.entity]
        guard row.mode == .upsert, plan.rule == .update || plan.rule == .replace else { return false }
        let attributes = plan.info.attributeNames.count
        var changed = false
        for bit in 0..<(attributes + links.count) where bit != plan.keyPosition {
            guard plan.rule == .replace || request.isGiven(row: row, bit: bit) else { continue }
            let known = entry.op == UInt8(ascii: "i") || entry.mask[bit >> 6] & (1 << UInt64(bit & 63)) != 0
            if bit < attributes {
                let cell = request.cells[row.firstCell + bit]
                if !known || !same(entry.cells[bit], cell, request) { changed = true }
                entry.cells[bit] = cell
            } else {
                if !known || entry.links[bit - attributes] != links[bit - attributes] { changed = true }
                entry.links[bit - attributes] = links[bit - attributes]
            }
            entry.mask[bit >> 6] |= 1 << UInt64(bit & 63)
        }
        return changed
    }

    private func same(_ a: BatchInsertRequest.Cell, _ b: BatchInsertRequest.Cell, _ request: BatchInsertRequest) -> Bool {
        switch (a, b) {
        case (.text(let o1, let c1), .text(let o2, let c2)):
            return c1 == c2 && request.text[Int(o1)..<Int(o1 + c1)].elementsEqual(request.text[Int(o2)..<Int(o2 + c2)])
        case (.value(let i), .value(let j)):
            return request.values[Int(i)] == request.values[Int(j)]
        case (.text, .value), (.value, .text):
            return keyText(a, request) == keyText(b, request)
        default:
            return a == b
        }
    }

    // MARK: - Text forms

    /// Why a record cannot go to PostgreSQL as it is (a NUL character in a text value), or nil.
    private func nulProblem(_ request: BatchInsertRequest, _ record: Int) -> String? {
        for rowIndex in request.rowRange(ofRecord: record) {
            let row = request.rows[rowIndex]
            let info = plans[row.entity].info
            for position in 0..<info.attributeNames.count {
                let hasNul: Bool
                switch request.cells[row.firstCell + position] {
                case .text(let offset, let count): hasNul = request.text[Int(offset)..<Int(offset + count)].contains(0)
                case .value(let index):
                    if case .string(let text) = request.values[Int(index)] { hasNul = text.utf8.contains(0) } else { hasNul = false }
                default: hasNul = false
                }
                if hasNul { return "\(info.name).\(info.attributeNames[position]): PostgreSQL text cannot hold the character U+0000" }
            }
        }
        return nil
    }

    /// A key as text, the form the lookups and staging tables carry it in.
    func keyText(_ cell: BatchInsertRequest.Cell, _ request: BatchInsertRequest) -> String? {
        switch cell {
        case .null: nil
        case .int(let number): String(number)
        case .double(let number): Self.keyText(number)
        case .text(let offset, let count): String(decoding: request.text[Int(offset)..<Int(offset + count)], as: UTF8.self)
        case .value(let index): Self.keyText(request.values[Int(index)])
        }
    }

    static func keyText(_ value: Value) -> String? {
        switch value {
        case .string(let text), .decimal(let text): text
        case .int(let number): String(number)
        case .double(let number): keyText(number)
        case .bool(let flag): flag ? "1" : "0"
        case .date(let date): keyText(date.timeIntervalSinceReferenceDate)
        case .uuid(let uuid): uuid.uuidString
        case .binary(let bytes): "\\x" + lowercaseHex(bytes)
        }
    }

    /// A double key as PostgreSQL tells keys apart: -0.0 is 0.0.
    static func keyText(_ number: Double) -> String {
        number == 0 ? "0.0" : "\(number)"
    }

    /// A PostgreSQL array literal of `items` (for `unnest($1::text[])`).
    static func arrayLiteral<Items: Sequence<String>>(_ items: Items) -> String {
        var literal = "{"
        for (number, item) in items.enumerated() {
            if number > 0 { literal += "," }
            literal += "\"" + item.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return literal + "}"
    }

    /// The staging rows in COPY's text format.
    private func copyText(_ entries: [Folded], plan: BatchInserter.EntityPlan, _ request: BatchInsertRequest) -> [UInt8] {
        var data: [UInt8] = []
        data.reserveCapacity(entries.count * 64)
        for entry in entries {
            data.append(contentsOf: String(entry.record).utf8)
            data.append(0x09)
            data.append(entry.op)
            for (position, cell) in entry.cells.enumerated() {
                data.append(0x09)
                appendCell(cell, type: plan.info.attributeTypes[position], request, to: &data)
            }
            for link in entry.links {
                data.append(0x09)
                if let link { Self.appendEscaped(link.utf8, to: &data) } else { data.append(contentsOf: [0x5C, 0x4E]) }
            }
            for word in entry.mask {
                data.append(0x09)
                data.append(contentsOf: String(Int64(bitPattern: word)).utf8)
            }
            data.append(0x0A)
        }
        return data
    }

    private func appendCell(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest, to data: inout [UInt8]) {
        switch cell {
        case .null: data.append(contentsOf: [0x5C, 0x4E])
        case .int(let number): data.append(contentsOf: String(number).utf8)
        case .double(let number): data.append(contentsOf: "\(number)".utf8)
        case .text(let offset, let count): Self.appendEscaped(request.text[Int(offset)..<Int(offset + count)], to: &data)
        case .value(let index):
            switch request.values[Int(index)] {
            case .int(let number): data.append(contentsOf: String(number).utf8)
            case .bool(let flag): data.append(flag ? 0x31 : 0x30)
            case .double(let number): data.append(contentsOf: "\(number)".utf8)
            case .date(let date): data.append(contentsOf: "\(date.timeIntervalSinceReferenceDate)".utf8)
            case .binary(let bytes):
                data.append(contentsOf: [0x5C, 0x5C, 0x78])
                data.append(contentsOf: lowercaseHex(bytes).utf8)
            case let value: Self.appendEscaped((Self.keyText(value) ?? "").utf8, to: &data)
            }
        }
    }

    /// Text in COPY's format: backslash, tab, newline and carriage return escaped.
    static func appendEscaped<Bytes: Sequence>(_ bytes: Bytes, to data: inout [UInt8]) where Bytes.Element == UInt8 {
        for byte in bytes {
            switch byte {
            case 0x5C: data.append(contentsOf: [0x5C, 0x5C])
            case 0x09: data.append(contentsOf: [0x5C, 0x74])
            case 0x0A: data.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: data.append(contentsOf: [0x5C, 0x72])
            default: data.append(byte)
            }
        }
    }
}
