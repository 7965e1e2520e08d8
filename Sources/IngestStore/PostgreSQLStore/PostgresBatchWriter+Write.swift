import Foundation

/// A key's text by its bytes.
struct TextKey: Hashable {
    let bytes: [UInt8]
    /// The bytes' hash, worked out once: a key is hashed again each time a dictionary finds,
    /// inserts or grows with it, and the writer's dictionaries do that several times a row.
    private let digest: Int

    init(_ text: String) { self.init(bytes: Array(text.utf8)) }

    init(bytes: [UInt8]) {
        self.bytes = bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        digest = hasher.finalize()
    }

    /// The key as the text the lookups send.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    static func == (lhs: TextKey, rhs: TextKey) -> Bool { lhs.digest == rhs.digest && lhs.bytes == rhs.bytes }

    func hash(into hasher: inout Hasher) { hasher.combine(digest) }
}

extension PostgresBatchWriter {
    /// One stored object a request writes: the rows of its key folded in record order.
    struct Folded {
        /// `u`: the key is stored (an UPDATE by `mask`); `i`: it is new (an INSERT).
        var op: UInt8
        /// The first record (index in the request) that names it.
        var record: Int
        /// Its first row's cells in the request; `folded` holds them once a later row of
        /// its key changed them (most keys come once: their cells are never copied).
        var firstCell: Int
        var cellCount: Int
        var folded: [BatchInsertRequest.Cell]?
        /// Each to-one's destination key.
        var links: [TextKey?]
        /// Bits (attributes, then to-ones) an UPDATE writes; for `i`, every bit is known.
        var mask: [UInt64]
        /// Its key (nil for an entity without one).
        var key: TextKey?
        /// Its row number: the stored one, or one reserved for it.
        var pk: Int64 = 0

        init(op: UInt8, record: Int, row: BatchInsertRequest.Row, cellCount: Int, links: [TextKey?], mask: [UInt64],
             key: TextKey?, pk: Int64 = 0) {
            self.op = op
            self.record = record
            firstCell = row.firstCell
            self.cellCount = cellCount
            self.links = links
            self.mask = mask
            self.key = key
            self.pk = pk
        }

        func cell(_ position: Int, _ request: BatchInsertRequest) -> BatchInsertRequest.Cell {
            folded?[position] ?? request.cells[firstCell + position]
        }
    }

    /// Writes `request` (or its records `only`) in the connection's open transaction and
    /// returns what it wrote. Records that cannot be written are in `rejected`.
    /// - Throws: `PostgresError.server`: with SQLSTATE 40001 when a key this request was to
    ///   create is stored after all (another process made it meanwhile, or it was assumed
    ///   new): roll back and try again; or the server's failure.
    public func write(_ request: BatchInsertRequest, only: [Int]? = nil) throws(PostgresError) -> BatchResult {
        var result = BatchResult()
        func reject(_ record: Int, _ reason: String) {
            result.rejected.append(BatchRejection(record: request.records[record].number, reason: reason))
        }
        // Values PostgreSQL cannot hold are refused before anything is sent.
        var accepted: [Int] = []
        for record in only ?? Array(request.records.indices) {
            if let reason = request.records[record].invalid ?? nulProblem(request, record) { reject(record, reason) } else { accepted.append(record) }
        }

        // Each row's key, by its bytes: PostgreSQL compares text by its bytes (Swift's
        // String equality would make "é" and "e\u{301}" one key).
        var rowKey = [TextKey?](repeating: nil, count: request.rows.count)
        let assumed = plans.indices.map { assumesNewKeys && undestined[$0] }
        var lookups = Array(repeating: Set<TextKey>(), count: plans.count)
        for record in accepted {
            for rowIndex in request.rowRange(ofRecord: record) {
                let row = request.rows[rowIndex]
                guard let position = plans[row.entity].keyPosition,
                      let key = keyBytes(request.cells[row.firstCell + position], type: plans[row.entity].info.attributeTypes[position], request)
                else { continue }
                rowKey[rowIndex] = key
                if !assumed[row.entity] { lookups[row.entity].insert(key) }
            }
        }
        // The keys stored already: remembered, or looked up (one query per entity).
        var existing = Array(repeating: [TextKey: Int64](), count: plans.count)
        for (entity, entityKeys) in lookups.enumerated() where !entityKeys.isEmpty {
            var unknown: [String] = []
            for key in entityKeys {
                if let pk = pendingRows[entity][key] ?? knownRows[entity][key] { existing[entity][key] = pk } else { unknown.append(key.text) }
            }
            guard !unknown.isEmpty else { continue }
            let found = try connection.execute(statements[entity].existing!, [Self.arrayLiteral(unknown)])
            for row in 0..<found.count { existing[entity][TextKey(found[row, 0]!)] = Int64(found[row, 1]!)! }
        }

        // Record by record: a record whose new rows lack required values is rejected whole
        // (as on SQLite), new objects related to a kept one are not made (nothing would link
        // them), and each key's rows fold in record order into one write.
        var folded = Array(repeating: [Folded](), count: plans.count)
        var foldedIndex = Array(repeating: [TextKey: Int](), count: plans.count)
        // Sized once: growing a dictionary rehashes every key in it.
        var rowsPerEntity = Array(repeating: 0, count: plans.count)
        for row in request.rows { rowsPerEntity[row.entity] += 1 }
        for entity in plans.indices where rowsPerEntity[entity] > 0 {
            folded[entity].reserveCapacity(rowsPerEntity[entity])
            foldedIndex[entity].reserveCapacity(rowsPerEntity[entity])
        }
        // Stored, or made by an earlier record of the request.
        func stored(_ entity: Int, _ key: TextKey) -> Bool {
            (!existing[entity].isEmpty && existing[entity][key] != nil) || foldedIndex[entity][key] != nil
        }
        // Records whose own object was stored: updated or unchanged, as the UPDATE says.
        var awaitingVerdict: [(entity: Int, record: Int)] = []
        var kept = 0
        let noKeys = [Value?](repeating: nil, count: request.rows.count)
        for record in accepted {
            let range = request.rowRange(ofRecord: record)
            let unlinked = request.unlinkedNewRows(in: range) { rowIndex in
                rowKey[rowIndex].map { stored(request.rows[rowIndex].entity, $0) } ?? false
            }
            let reason = (try? request.problem(in: range, keys: noKeys, skipping: unlinked) { entity, value in
                guard let key = keyBytes(value) else { return nil }
                return existing[entity][key] ?? (foldedIndex[entity][key] != nil ? -1 : nil)
            }) ?? nil
            if let reason {
                reject(record, reason)
                continue
            }
            kept += 1
            // A record's rows fold last to first, the order the SQLite batch path writes them in.
            for rowIndex in range.reversed() where !unlinked.contains(rowIndex) {
                let row = request.rows[rowIndex]
                let plan = plans[row.entity]
                let own = rowIndex == range.lowerBound
                let links = (0..<plan.info.toOneColumns.count).map { number -> TextKey? in
                    let target = Int(request.links[row.firstLink + number])
                    return target < 0 ? nil : rowKey[target]
                }
                let bits = plan.info.attributeNames.count + plan.info.toOneColumns.count
                let cellCount = plan.info.attributeNames.count
                guard let key = rowKey[rowIndex] else {
                    folded[row.entity].append(Folded(op: UInt8(ascii: "i"), record: record, row: row, cellCount: cellCount,
                                                     links: links, mask: allBits(bits, plan), key: nil))
                    continue
                }
                if let at = foldedIndex[row.entity][key] {
                    let changed = apply(row, links: links, to: &folded[row.entity][at], request)
                    if own {
                        // Made earlier in this run: in this request, or stored since the run began.
                        if existing[row.entity][key].map({ $0 >= (firstRowOfRun[plan.info.name] ?? .max) }) ?? true { result.duplicates += 1 }
                        if changed { result.updated += 1 } else { result.unchanged += 1 }
                    }
                } else if !existing[row.entity].isEmpty, let stored = existing[row.entity][key] {
                    var entry = Folded(op: UInt8(ascii: "u"), record: record, row: row, cellCount: cellCount, links: links,
                                       mask: Array(repeating: 0, count: plan.maskWords), key: key, pk: stored)
                    _ = apply(row, links: links, to: &entry, request)
                    foldedIndex[row.entity][key] = folded[row.entity].count
                    folded[row.entity].append(entry)
                    if own {
                        awaitingVerdict.append((row.entity, record))
                        if stored >= (firstRowOfRun[plan.info.name] ?? .max) { result.duplicates += 1 }
                    }
                } else {
                    foldedIndex[row.entity][key] = folded[row.entity].count
                    folded[row.entity].append(Folded(op: UInt8(ascii: "i"), record: record, row: row, cellCount: cellCount,
                                                     links: links, mask: allBits(bits, plan), key: key))
                }
            }
        }

        // Row numbers for the new rows, so that links are numbers before anything is written.
        var newKeys = Array(repeating: [TextKey: Int64](), count: plans.count)
        // Only the entities something links to need their new keys' numbers by key.
        for (entity, entries) in folded.enumerated() {
            let count = entries.count { $0.op == UInt8(ascii: "i") }
            guard count > 0 else { continue }
            let numbers = try connection.execute(statements[entity].reserve, [String(count)])
            var next = 0
            for index in entries.indices where entries[index].op == UInt8(ascii: "i") {
                folded[entity][index].pk = Int64(numbers[next, 0]!)!
                if !undestined[entity], let key = entries[index].key { newKeys[entity][key] = folded[entity][index].pk }
                next += 1
            }
        }
        func linked(_ entity: Int, _ number: Int, _ key: TextKey?) -> Int64? {
            guard let key else { return nil }
            let info = plans[entity].info
            let target = planIndex[info.relationships[info.toOneColumns[number].relationship].destination]!
            return existing[target][key] ?? newKeys[target][key]
        }

        // New rows straight into their tables, in key order: two transactions inserting the
        // same new keys then wait for each other in one order, never in a cycle.
        // Keys another process made meanwhile, in entities others link to: stored, not made here.
        var madeElsewhere = Array(repeating: Set<TextKey>(), count: plans.count)
        do {
            for entity in order {
                let entries = folded[entity].filter { $0.op == UInt8(ascii: "i") }
                guard !entries.isEmpty else { continue }
                let sorted = plans[entity].keyPosition == nil ? entries : entries.sorted { ($0.key?.bytes ?? []).lexicographicallyPrecedes($1.key?.bytes ?? []) }
                let text = newRowsText(sorted, entity: entity, request, linked: linked)
                guard !undestined[entity], let copyStaged = statements[entity].copyStagedNew, let insertNew = statements[entity].insertNew else {
                    try connection.copyIn(statements[entity].copyNew, data: text)
                    result.inserted[plans[entity].info.name] = entries.count
                    continue
                }
                // Processes that make the same related objects at once wait for each other
                // here, and the later one links to the earlier one's rows instead of failing.
                try connection.copyIn(copyStaged, data: text)
                let made = try connection.execute(insertNew)
                try connection.execute("TRUNCATE " + quoted("_new_\(entity)"))
                result.inserted[plans[entity].info.name] = made.count
                guard made.count < entries.count else { continue }
                var madeHere = Set<TextKey>()
                for row in 0..<made.count { madeHere.insert(TextKey(made[row, 0]!)) }
                let lost = sorted.compactMap(\.key).filter { !madeHere.contains($0) }
                let found = try connection.execute(statements[entity].existing!, [Self.arrayLiteral(lost.map(\.text))])
                for row in 0..<found.count {
                    let key = TextKey(found[row, 0]!)
                    newKeys[entity][key] = Int64(found[row, 1]!)!
                    madeElsewhere[entity].insert(key)
                }
                for index in folded[entity].indices where folded[entity][index].key.map({ madeElsewhere[entity].contains($0) }) ?? false {
                    folded[entity][index].pk = newKeys[entity][folded[entity][index].key!]!
                }
            }
        } catch {
            // A key assumed new, or made by another process since the lookup: the caller tries again, looking keys up.
            if case .server(_, let state) = error, state == "23505" {
                assumesNewKeys = false
                throw .server("a key this batch was to create is stored already; try again", sqlState: "40001")
            }
            throw error
        }

        // Stored rows the request may change: staged, then one UPDATE per entity. Related
        // objects given again as this writer last wrote them are left out: nothing to change.
        var staged: [Int] = []
        var updatedRecords = Array(repeating: Set<Int>(), count: plans.count)
        var contents = Array(repeating: [(TextKey, Int)](), count: plans.count)
        for entity in order where !undestined[entity] {
            for index in folded[entity].indices {
                guard let key = folded[entity][index].key else { continue }
                let hash = contentHash(folded[entity][index], request)
                if folded[entity][index].op == UInt8(ascii: "u"), (pendingContents[entity][key] ?? knownContents[entity][key]) == hash {
                    folded[entity][index].mask = Array(repeating: 0, count: folded[entity][index].mask.count)
                }
                contents[entity].append((key, hash))
            }
        }
        for entity in order {
            let changes = folded[entity].filter { $0.op == UInt8(ascii: "u") && $0.mask.contains { $0 != 0 } }
            guard !changes.isEmpty, let update = statements[entity].update else { continue }
            try connection.copyIn(statements[entity].copy, data: stagedText(changes, entity: entity, request, linked: linked))
            staged.append(entity)
            let updated = try connection.execute(update)
            for row in 0..<updated.count { updatedRecords[entity].insert(Int(updated[row, 0]!)!) }
        }
        if !staged.isEmpty {
            try connection.execute("TRUNCATE " + staged.map { quoted("_stage_\($0)") }.joined(separator: ", "))
        }
        for (entity, record) in awaitingVerdict {
            if updatedRecords[entity].contains(record) { result.updated += 1 } else { result.unchanged += 1 }
        }
        // What this write taught of objects others link to (it counts once the transaction commits).
        for entity in plans.indices where !undestined[entity] {
            for entry in folded[entity] { if let key = entry.key { pendingRows[entity][key] = entry.pk } }
            // What another process made is not known to hold this write's fields.
            for (key, hash) in contents[entity] where !madeElsewhere[entity].contains(key) { pendingContents[entity][key] = hash }
        }
        result.records = kept
        return result
    }

    /// A hash of what a folded row gives: the fields by the mask, and the links.
    private func contentHash(_ entry: Folded, _ request: BatchInsertRequest) -> Int {
        var hasher = Hasher()
        request.text.withUnsafeBytes { text in
            for position in 0..<entry.cellCount {
                hasher.combine(position)
                switch entry.cell(position, request) {
                case .null: hasher.combine(0 as UInt8)
                case .int(let number): hasher.combine(number)
                case .double(let number): hasher.combine(number.bitPattern)
                case .text(let offset, let count): hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: text[Int(offset)..<Int(offset + count)]))
                case .value(let index): hasher.combine(request.values[Int(index)])
                }
            }
        }
        hasher.combine(entry.links)
        hasher.combine(entry.mask)
        return hasher.finalize()
    }

    // MARK: - Folding


    private func allBits(_ count: Int, _ plan: BatchEntityPlan) -> [UInt64] {
        (0..<plan.maskWords).map { word in
            let left = count - word * 64
            return left >= 64 ? .max : (left <= 0 ? 0 : (1 << UInt64(left)) - 1)
        }
    }

    /// Applies `row` to `entry` by the plan's rule; returns whether a value it gives differs
    /// from what `entry` held (or is not known to be the same).
    private func apply(_ row: BatchInsertRequest.Row, links: [TextKey?], to entry: inout Folded, _ request: BatchInsertRequest) -> Bool {
        let plan = plans[row.entity]
        guard row.mode == .upsert, plan.rule == .update || plan.rule == .replace else { return false }
        let attributes = plan.info.attributeNames.count
        var changed = false
        for bit in 0..<(attributes + links.count) where bit != plan.keyPosition {
            guard plan.rule == .replace || request.isGiven(row: row, bit: bit) else { continue }
            let known = entry.op == UInt8(ascii: "i") || entry.mask[bit >> 6] & (1 << UInt64(bit & 63)) != 0
            if bit < attributes {
                let cell = request.cells[row.firstCell + bit]
                if !known || !same(entry.cell(bit, request), cell, request) { changed = true }
                if entry.folded == nil { entry.folded = (0..<entry.cellCount).map { request.cells[entry.firstCell + $0] } }
                entry.folded![bit] = cell
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
    /// Text cells are a record's own unescaped JSON strings, which never hold a raw NUL
    /// (JSON forbids control characters, and the split checked): only values made from
    /// escapes (`\u0000`) are looked at.
    private func nulProblem(_ request: BatchInsertRequest, _ record: Int) -> String? {
        for rowIndex in request.rowRange(ofRecord: record) {
            let row = request.rows[rowIndex]
            let info = plans[row.entity].info
            for position in 0..<info.attributeNames.count {
                guard case .value(let index) = request.cells[row.firstCell + position],
                      case .string(let text) = request.values[Int(index)], text.utf8.contains(0) else { continue }
                return "\(info.name).\(info.attributeNames[position]): PostgreSQL text cannot hold the character U+0000"
            }
        }
        return nil
    }

    /// A row's key as bytes, as the lookups and the folding tell keys apart. PostgreSQL
    /// keeps dates to the microsecond: date keys closer than that are one key there.
    func keyBytes(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest) -> TextKey? {
        switch cell {
        case .null: return nil
        case .text(let offset, let count): return TextKey(bytes: Array(request.text[Int(offset)..<Int(offset + count)]))
        case .int(let number):
            var bytes: [UInt8] = []
            Self.appendInteger(number, to: &bytes)
            return TextKey(bytes: bytes)
        case .double(let number) where type == .date: return TextKey(Self.keyText((number * 1e6).rounded() / 1e6))
        default:
            guard var text = keyText(cell, request) else { return nil }
            if type == .date, let seconds = Double(text) { text = Self.keyText((seconds * 1e6).rounded() / 1e6) }
            return TextKey(text)
        }
    }

    /// A value's key bytes (for the checks that name a key by its value).
    func keyBytes(_ value: Value) -> TextKey? {
        Self.keyText(value).map(TextKey.init)
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

    /// New rows in COPY's text format, for the entity's own table: the row number, each
    /// attribute in its column's text form, each link's row number.
    private func newRowsText(_ entries: [Folded], entity: Int, _ request: BatchInsertRequest,
                             linked: (Int, Int, TextKey?) -> Int64?) -> [UInt8] {
        let plan = plans[entity]
        var data: [UInt8] = []
        data.reserveCapacity(entries.count * 96)
        for entry in entries {
            Self.appendInteger(entry.pk, to: &data)
            for position in 0..<entry.cellCount {
                data.append(0x09)
                appendColumnValue(entry.cell(position, request), type: plan.info.attributeTypes[position], request, to: &data)
            }
            for (number, link) in entry.links.enumerated() {
                data.append(0x09)
                if let pk = linked(entity, number, link) { Self.appendInteger(pk, to: &data) } else { data.append(contentsOf: [0x5C, 0x4E]) }
            }
            data.append(0x0A)
        }
        return data
    }

    /// Stored rows' changes in COPY's text format, for the staging table.
    private func stagedText(_ entries: [Folded], entity: Int, _ request: BatchInsertRequest,
                            linked: (Int, Int, TextKey?) -> Int64?) -> [UInt8] {
        let plan = plans[entity]
        var data: [UInt8] = []
        data.reserveCapacity(entries.count * 96)
        for entry in entries {
            Self.appendInteger(Int64(entry.record), to: &data)
            data.append(0x09)
            Self.appendInteger(entry.pk, to: &data)
            for position in 0..<entry.cellCount {
                data.append(0x09)
                appendCell(entry.cell(position, request), type: plan.info.attributeTypes[position], request, to: &data)
            }
            for (number, link) in entry.links.enumerated() {
                data.append(0x09)
                if let pk = linked(entity, number, link) { Self.appendInteger(pk, to: &data) } else { data.append(contentsOf: [0x5C, 0x4E]) }
            }
            for word in entry.mask {
                data.append(0x09)
                Self.appendInteger(Int64(bitPattern: word), to: &data)
            }
            data.append(0x0A)
        }
        return data
    }

    /// A cell in the text form of its attribute's column (`postgresType`): what COPY
    /// into the entity's own table reads.
    private func appendColumnValue(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest,
                                   to data: inout [UInt8]) {
        switch (type, cell) {
        case (_, .null): data.append(contentsOf: [0x5C, 0x4E])
        case (.bool, .int(let number)): data.append(number != 0 ? 0x74 : 0x66)
        case (.bool, .value(let index)):
            if case .bool(let flag) = request.values[Int(index)] { data.append(flag ? 0x74 : 0x66) } else { appendCell(cell, type: type, request, to: &data) }
        case (.date, .double(let seconds)): Self.appendTimestamp(seconds, to: &data)
        case (.date, .value(let index)):
            if case .date(let date) = request.values[Int(index)] { Self.appendTimestamp(date.timeIntervalSinceReferenceDate, to: &data) }
            else { appendCell(cell, type: type, request, to: &data) }
        default: appendCell(cell, type: type, request, to: &data)
        }
    }

    /// Seconds since 2001 as a `timestamptz` literal at UTC, to the microsecond
    /// (`2024-03-05 12:34:56.123456+00`, proleptic Gregorian), without a formatter.
    static func appendTimestamp(_ seconds: Double, to data: inout [UInt8]) {
        let micros = Int64((seconds * 1_000_000).rounded()) + 978_307_200_000_000
        var whole = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            whole -= 1
        }
        var days = whole / 86_400
        var second = whole % 86_400
        if second < 0 {
            second += 86_400
            days -= 1
        }
        let (year, month, day) = StoredDate.civil(days: days)
        func digits(_ value: Int64, _ width: Int) {
            var buffer = [UInt8](repeating: 48, count: width)
            var rest = value
            for index in stride(from: width - 1, through: 0, by: -1) {
                buffer[index] = UInt8(48 + rest % 10)
                rest /= 10
            }
            data.append(contentsOf: buffer)
        }
        digits(year, 4)
        data.append(0x2D); digits(Int64(month), 2)
        data.append(0x2D); digits(Int64(day), 2)
        data.append(0x20); digits(second / 3600, 2)
        data.append(0x3A); digits(second / 60 % 60, 2)
        data.append(0x3A); digits(second % 60, 2)
        data.append(0x2E); digits(fraction, 6)
        data.append(contentsOf: [0x2B, 0x30, 0x30])
    }

    private func appendCell(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest, to data: inout [UInt8]) {
        switch cell {
        case .null: data.append(contentsOf: [0x5C, 0x4E])
        case .int(let number): Self.appendInteger(number, to: &data)
        case .double(let number): data.append(contentsOf: "\(number)".utf8)
        case .text(let offset, let count): Self.appendEscaped(request.text[Int(offset)..<Int(offset + count)], to: &data)
        case .value(let index):
            switch request.values[Int(index)] {
            case .int(let number): Self.appendInteger(number, to: &data)
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

    /// An integer's decimal digits, without making a String.
    static func appendInteger(_ value: Int64, to data: inout [UInt8]) {
        if value == .min {
            data.append(contentsOf: "-9223372036854775808".utf8)
            return
        }
        var magnitude = value.magnitude
        if value < 0 { data.append(0x2D) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var index = 20
            repeat {
                index -= 1
                buffer[index] = UInt8(48 + magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            data.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[index..<20]))
        }
    }

    /// Text in COPY's format: backslash, tab, newline and carriage return escaped. Runs
    /// without one are copied whole (most text has none).
    static func appendEscaped<Bytes: Collection>(_ bytes: Bytes, to data: inout [UInt8]) where Bytes.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            var start = 0
            for index in 0..<buffer.count {
                let byte = buffer[index]
                guard byte == 0x5C || byte == 0x09 || byte == 0x0A || byte == 0x0D else { continue }
                data.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<index]))
                data.append(0x5C)
                data.append(byte == 0x5C ? 0x5C : byte == 0x09 ? 0x74 : byte == 0x0A ? 0x6E : 0x72)
                start = index + 1
            }
            data.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        guard done == nil else { return }
        appendEscaped(Array(bytes), to: &data)
    }
}
