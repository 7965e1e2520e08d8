import Foundation

extension PostgresBatchWriter {
    /// What a write works out from its request alone, before it needs the connection: the
    /// records it writes (the others rejected, with their reasons) and each row's key as a
    /// slot of its entity's batch. A worker stages a batch on its mapping thread while its
    /// writer's connection is busy with the one before (`stage` reads nothing that a write
    /// changes).
    public struct Staged: Sendable {
        let accepted: [Int]
        let rejected: [BatchRejection]
        let slots: [KeySlots]
        /// Per entity, its rows in the request.
        let rows: [Int]
        let rowSlot: [Int32]
    }

    /// Stages `request` (or its records `only`) for `write`.
    public func stage(_ request: BatchInsertRequest, only: [Int]? = nil) -> Staged {
        var rejected: [BatchRejection] = []
        // Values PostgreSQL cannot hold are refused before anything is sent.
        var accepted: [Int] = []
        for record in only ?? Array(request.records.indices) {
            if let reason = request.records[record].invalid ?? nulProblem(request, record) {
                rejected.append(BatchRejection(record: request.records[record].number, reason: reason))
            } else {
                accepted.append(record)
            }
        }
        // Each row's key, by its bytes (PostgreSQL compares text by its bytes: Swift's String
        // equality would make "é" and "e\u{301}" one key), as a slot of its entity's batch.
        var rowsPerEntity = Array(repeating: 0, count: plans.count)
        for row in request.rows { rowsPerEntity[row.entity] += 1 }
        var slots = plans.indices.map { KeySlots(rows: plans[$0].keyPosition == nil ? 0 : rowsPerEntity[$0]) }
        var rowSlot = [Int32](repeating: -1, count: request.rows.count)
        for record in accepted {
            for rowIndex in request.rowRange(ofRecord: record) {
                let row = request.rows[rowIndex]
                guard let position = plans[row.entity].keyPosition,
                      let key = keyBytes(request.cells[row.firstCell + position], type: plans[row.entity].info.attributeTypes[position], request)
                else { continue }
                rowSlot[rowIndex] = slots[row.entity].slot(for: key)
            }
        }
        return Staged(accepted: accepted, rejected: rejected, slots: slots, rows: rowsPerEntity, rowSlot: rowSlot)
    }

    /// Writes `request` (or its records `only`) in the connection's open transaction and
    /// returns what it wrote; `staged` is what `stage` made of it, when it was staged
    /// before. Records that cannot be written are in `rejected`.
    /// - Throws: `PostgresError.server`: with SQLSTATE 40001 when a key this request was to
    ///   create is stored after all (another process made it meanwhile, or it was assumed
    ///   new): roll back and try again; or the server's failure.
    public func write(_ request: BatchInsertRequest, only: [Int]? = nil, staged: Staged? = nil) throws(PostgresError) -> BatchResult {
        let made = only == nil ? staged ?? stage(request) : stage(request, only: only)
        // Kept until the transaction ends: a rollback to a savepoint can undo the TRUNCATE.
        if !usedStagingTables.isEmpty {
            try connection.execute("TRUNCATE " + usedStagingTables.sorted().joined(separator: ", "))
        }
        var state = WriteState(request: request, made: made, plans: plans)
        try lookUpStoredKeys(&state)
        fold(made.accepted, &state)
        // A record rejected as new may be stored (kept under `keepExisting`, or lacking only
        // what its stored row has): it never reaches the insert that would say so. Once one
        // is found, every key is looked up, now and in later writes.
        if assumesNewKeys, try anyStored(state.rejectedAsNew) {
            assumesNewKeys = false
            state = WriteState(request: request, made: made, plans: plans)
            try lookUpStoredKeys(&state)
            fold(made.accepted, &state)
        }
        try numberNewRows(&state)
        try insertNewRows(&state)
        try markPlaceholders(state)
        try updateStoredRows(&state)
        rememberWritten(state)
        return state.result
    }

    /// What one `write` works on: the request's rows folded per entity (`EntityBatch`),
    /// and what the write finds and does on the way.
    struct WriteState {
        let request: BatchInsertRequest
        let rowSlot: [Int32]
        /// The write's own arrays by slot and by entry, beside the staged slots it only reads.
        var batches: [EntityBatch]
        var result = BatchResult()
        /// Records whose own object was stored: updated or unchanged, as the UPDATE says.
        var awaitingVerdict: [(entity: Int, record: Int, madeThisRun: Bool)] = []
        /// Keys another process made meanwhile, in entities others link to: stored, not made here.
        var madeElsewhere: [Set<Int32>]
        /// Per entity and entry, the hash of what the entry gives (`contentHash`).
        var contents: [[Int]]
        /// Keys of rejected records' rows taken as new without a lookup (`assumesNewKeys`).
        var rejectedAsNew: [(entity: Int, key: TextKey)] = []

        init(request: BatchInsertRequest, made: Staged, plans: [BatchEntityPlan]) {
            self.request = request
            rowSlot = made.rowSlot
            batches = plans.indices.map { entity in
                EntityBatch(slots: made.slots[entity], rows: made.rows[entity], linkCount: plans[entity].info.toOneColumns.count,
                            maskWords: plans[entity].maskWords)
            }
            result.rejected = made.rejected
            madeElsewhere = Array(repeating: [], count: plans.count)
            contents = Array(repeating: [], count: plans.count)
        }

        mutating func reject(_ record: Int, _ reason: String) {
            result.rejected.append(BatchRejection(record: request.records[record].number, reason: reason))
        }
    }

    /// Whether any of `keys` is stored (one query per entity).
    private func anyStored(_ keys: [(entity: Int, key: TextKey)]) throws(PostgresError) -> Bool {
        for (entity, given) in Dictionary(grouping: keys, by: \.entity) {
            if try connection.execute(statements[entity].existing!, [Self.arrayLiteral(given.map(\.key.text))]).count > 0 { return true }
        }
        return false
    }

    /// The keys stored already: remembered, or looked up (one query per entity).
    private func lookUpStoredKeys(_ state: inout WriteState) throws(PostgresError) {
        let generation = known.generation
        for entity in plans.indices where !(assumesNewKeys && undestined[entity]) && !state.batches[entity].keys.isEmpty {
            var unknown: [String] = []
            known.withKnown(entity) { known in
                let remembering = !known.isEmpty || !pending[entity].isEmpty
                for slot in state.batches[entity].keys.indices {
                    let key = state.batches[entity].keys[slot]
                    if remembering, var memory = (pending[entity].isEmpty ? nil : pending[entity][key]) ?? known[key] {
                        // Others wrote since: the object's row number holds, its fields may not.
                        if memory.generation != generation { memory.content = nil }
                        state.batches[entity].stored[slot] = memory.pk
                        state.batches[entity].remembered[slot] = memory
                        state.batches[entity].placeholder[slot] = memory.mayBePlaceholder
                    } else {
                        unknown.append(key.text)
                    }
                }
            }
            guard !unknown.isEmpty else { continue }
            let found = try connection.execute(statements[entity].existing!, [Self.arrayLiteral(unknown)])
            for row in 0..<found.count {
                guard let slot = state.batches[entity].slotOf[TextKey(try found.text(row, 0))] else { continue }
                state.batches[entity].stored[Int(slot)] = try found.int64(row, 1)
                state.batches[entity].placeholder[Int(slot)] = found[row, 2] == "t"
            }
        }
    }

    /// New rows of entities no other links to take their numbers from the table as they are
    /// copied: one statement and a number a row fewer to send back and forth. With history
    /// on, such rows need numbers history can name: the table still gives them (see
    /// `tableNumbered`), found by key where they are not one run. Keyless ones take theirs first.
    private func numberedByTable(_ entity: Int) -> Bool {
        undestined[entity] && statements[entity].copyNewUnnumbered != nil && (!recordsHistory || plans[entity].keyPosition != nil)
    }

    /// Row numbers for the new rows, so that links are numbers before anything is written.
    private func numberNewRows(_ state: inout WriteState) throws(PostgresError) {
        for entity in plans.indices where !numberedByTable(entity) {
            let count = state.batches[entity].folded.count { $0.op == UInt8(ascii: "i") }
            guard count > 0 else { continue }
            let numbers = try connection.execute(statements[entity].reserve, [String(count)])
            var next = 0
            for index in state.batches[entity].folded.indices where state.batches[entity].folded[index].op == UInt8(ascii: "i") {
                state.batches[entity].folded[index].pk = try numbers.int64(next, 0)
                next += 1
            }
        }
    }

    /// New rows straight into their tables, in key order: two transactions inserting the
    /// same new keys then wait for each other in one order, never in a cycle.
    private func insertNewRows(_ state: inout WriteState) throws(PostgresError) {
        let request = state.request
        func linked(_ entity: Int, _ number: Int, _ slot: Int32) -> Int64? {
            state.batches[linkTargets[entity][number]].linkedPK(slot)
        }
        do throws(PostgresError) {
            for entity in order {
                var entries = state.batches[entity].folded.indices.filter { state.batches[entity].folded[$0].op == UInt8(ascii: "i") }
                guard !entries.isEmpty else { continue }
                if plans[entity].keyPosition != nil {
                    let batch = state.batches[entity]
                    func precedes(_ a: Int, _ b: Int) -> Bool {
                        let (first, second) = (batch.folded[a].slot, batch.folded[b].slot)
                        guard first >= 0, second >= 0 else { return first < 0 && second >= 0 }
                        return batch.keys[Int(first)].precedes(batch.keys[Int(second)])
                    }
                    // Feeds often come in key order: checked in one pass before sorting.
                    if entries.indices.dropFirst().contains(where: { precedes(entries[$0], entries[$0 - 1]) }) {
                        entries.sort(by: precedes)
                    }
                }
                let batch = state.batches[entity]
                let binary = binaryEncodable(entries, of: batch, entity: entity, request)
                let numbered = !numberedByTable(entity)
                func rows(_ stream: inout CopyStream) {
                    if binary {
                        appendNewRowsBinary(entries, of: batch, entity: entity, request, numbered: numbered, linked: linked, to: &stream)
                    } else {
                        appendNewRows(entries, of: batch, entity: entity, request, numbered: numbered, linked: linked, to: &stream)
                    }
                }
                let format = binary ? " (FORMAT binary)" : ""
                func copy(_ statement: String) throws(PostgresError) {
                    guard binary else { return try connection.copyIn(statement, write: rows) }
                    let piece = entries.count <= Self.piecedCopyLimit ? rowsPerBinaryCopy : entries.count
                    try connection.copyIn(statement + format, rows: entries.count, rowsPerStatement: piece) { range, stream in
                        appendNewRowsBinary(Array(entries[range]), of: batch, entity: entity, request, numbered: numbered, linked: linked, to: &stream)
                    }
                }
                guard !undestined[entity], let copyStaged = statements[entity].copyStagedNew, let insertNew = statements[entity].insertNew else {
                    let before = recordsHistory && !numbered ? try lastNumber(entity, taking: true) : nil
                    try copy(numbered ? statements[entity].copyNew : statements[entity].copyNewUnnumbered!)
                    state.result.inserted[plans[entity].info.name] = entries.count
                    if recordsHistory {
                        let pks: [Int64]
                        if let before {
                            pks = try tableNumbered(entries, of: batch, entity: entity, after: before)
                        } else {
                            pks = entries.map { batch.folded[$0].pk }
                        }
                        state.result.history.add(plans[entity].info.name, .insert, rows: pks)
                    }
                    continue
                }
                // Transactions that make the same related objects at once wait for each other
                // here (`ON CONFLICT` waits for the other's end); see below for the later one.
                usedStagingTables.insert(quoted("_new_\(entity)"))
                try copy(copyStaged)
                let made = try connection.execute(insertNew)
                state.result.inserted[plans[entity].info.name] = made.count
                guard made.count < entries.count else {
                    if recordsHistory { state.result.history.add(plans[entity].info.name, .insert, rows: entries.map { batch.folded[$0].pk }) }
                    continue
                }
                // The rows made here, by number: the server's text of a key (a date's, a bool's, a
                // double's) need not be the bytes this writer keys it by; the numbers are its own.
                let madeHere = Set((0..<made.count).compactMap { made[$0, 1].flatMap { Int64($0) } })
                if recordsHistory {
                    state.result.history.add(plans[entity].info.name, .insert, rows: madeHere.sorted())
                }
                let lostSlots = entries.compactMap { index -> Int? in
                    let entry = state.batches[entity].folded[index]
                    return entry.slot < 0 || madeHere.contains(entry.pk) ? nil : Int(entry.slot)
                }
                // Made by another transaction since the lookup. An object a record of this batch
                // describes takes that record's values over the row under its rule, as any stored
                // row does: the save runs again (a serialization failure), and its lookup finds
                // the row. Linking to the row without them lost the record's values. An object
                // only named here (a placeholder) links to the row: it has nothing to write.
                if lostSlots.contains(where: { !state.batches[entity].placeholder[$0] }) {
                    // A writer outside the run's: what is remembered of fields may be its too.
                    known.othersWrote()
                    throw .server("an object this batch was to create was made by another transaction meanwhile; try again",
                                  sqlState: .serializationFailure, sql: insertNew)
                }
                let lost = lostSlots.map { state.batches[entity].keys[$0] }
                let found = try connection.execute(statements[entity].existing!, [Self.arrayLiteral(lost.map(\.text))])
                for row in 0..<found.count {
                    guard let slot = state.batches[entity].slotOf[TextKey(try found.text(row, 0))] else { continue }
                    state.madeElsewhere[entity].insert(slot)
                    state.batches[entity].folded[Int(state.batches[entity].foldedAt[Int(slot)])].pk = try found.int64(row, 1)
                }
            }
        } catch {
            // A key assumed new, or made by another process since the lookup: the caller tries again, looking keys up.
            if error.sqlState == .uniqueViolation {
                assumesNewKeys = false
                // Said as a serialization failure: the writer's callers run the transaction again.
                throw .server("a key this batch was to create is stored already; try again", sqlState: .serializationFailure, sql: error.sql)
            }
            throw error
        }
    }

    /// New objects only named by key are placeholders: marked, for the record that describes them.
    private func markPlaceholders(_ state: WriteState) throws(PostgresError) {
        for entity in order where !undestined[entity] {
            let batch = state.batches[entity]
            let marked = batch.folded.compactMap { entry -> String? in
                guard entry.op == UInt8(ascii: "i"), entry.slot >= 0, batch.placeholder[Int(entry.slot)],
                      !state.madeElsewhere[entity].contains(entry.slot) else { return nil }
                return String(entry.pk)
            }
            guard !marked.isEmpty else { continue }
            _ = try connection.execute("UPDATE \(plans[entity].info.table) SET \(EntityInfo.placeholderColumn) = 1 WHERE \"_pk\" = ANY($1::bigint[])",
                                       ["{" + marked.joined(separator: ",") + "}"])
        }
    }

    /// Stored rows the request may change: staged, then one UPDATE per entity. Related
    /// objects given again as this writer last wrote them are left out: nothing to change.
    private func updateStoredRows(_ state: inout WriteState) throws(PostgresError) {
        let request = state.request
        func linked(_ entity: Int, _ number: Int, _ slot: Int32) -> Int64? {
            state.batches[linkTargets[entity][number]].linkedPK(slot)
        }
        for entity in order where !undestined[entity] {
            state.contents[entity].reserveCapacity(state.batches[entity].folded.count)
            // Rows whose update would change nothing: their given-masks are cleared after the
            // loop. Within it the batch is one copy, not one per row (`linked` reads `state`,
            // so a row's batch handed over from `state` was copied, every array retained).
            var unchanged: [Int] = []
            do {
                let batch = state.batches[entity]
                for index in batch.folded.indices {
                    let entry = batch.folded[index]
                    let hash = contentHash(index, of: batch, entity: entity, request, linked: linked)
                    state.contents[entity].append(hash)
                    if entry.op == UInt8(ascii: "u"), entry.round == 0, !entry.fills, entry.slot >= 0,
                       batch.remembered[Int(entry.slot)]?.content == hash {
                        unchanged.append(index)
                    }
                }
            }
            let words = state.batches[entity].maskWords
            for index in unchanged {
                for word in 0..<words { state.batches[entity].masks[index * words + word] = 0 }
            }
        }
        var updatedRecords = Array(repeating: Set<Int>(), count: plans.count)
        for entity in order {
            let batch = state.batches[entity]
            let changes = batch.folded.indices.filter { index in
                batch.folded[index].op == UInt8(ascii: "u")
                    && (batch.folded[index].fills || batch.masks[(index * batch.maskWords)..<((index + 1) * batch.maskWords)].contains { $0 != 0 })
            }
            guard !changes.isEmpty, let update = statements[entity].update else { continue }
            let stage = quoted("_stage_\(entity)")
            usedStagingTables.insert(stage)
            // Rounds (lineage only): each after the one before it, each alone in the staging table.
            let rounds = changes.contains { batch.folded[$0].round > 0 }
                ? Dictionary(grouping: changes) { batch.folded[$0].round }.sorted { $0.key < $1.key }.map(\.value) : [changes]
            for (number, round) in rounds.enumerated() {
                if number > 0 { try connection.execute("DELETE FROM \(stage)") }
                try connection.copyIn(statements[entity].copy) { stream in
                    appendStagedRows(round, of: batch, entity: entity, request, linked: linked, to: &stream)
                }
                let updated = try connection.execute(update)
                for row in 0..<updated.count { updatedRecords[entity].insert(try updated.int(row, 0)) }
                if recordsHistory, updated.count > 0 {
                    var entryOf: [Int64: Int] = [:]
                    for index in round { entryOf[batch.folded[index].pk] = index }
                    for row in 0..<updated.count {
                        guard let pk = Int64(try updated.text(row, 1)), let index = entryOf[pk] else { continue }
                        state.result.history.add(plans[entity].info.name, .update, row: pk, properties: givenProperties(index, of: batch, entity: entity))
                    }
                }
            }
        }
        for (entity, record, madeThisRun) in state.awaitingVerdict {
            state.result.countStored(changed: updatedRecords[entity].contains(record), madeThisRun: madeThisRun)
        }
    }

    /// What this write taught of objects others link to, where it differs from what the
    /// writer remembered (it counts once the transaction commits). What another process
    /// made is not known to hold this write's fields.
    private func rememberWritten(_ state: WriteState) {
        let contentGeneration = known.generation
        for entity in plans.indices where !undestined[entity] {
            let batch = state.batches[entity]
            // A key written in rounds holds the union of their fields: no one entry's hash says it.
            // Only lineage writes in rounds: without it, no walk over the entries on every save.
            let inRounds = plans[entity].info.lineagePositions.isEmpty ? [] : Set(batch.folded.lazy.filter { $0.round > 0 }.map(\.slot))
            for (index, entry) in batch.folded.enumerated() where entry.slot >= 0 {
                let memory = Known(pk: entry.pk, content: state.madeElsewhere[entity].contains(entry.slot) || inRounds.contains(entry.slot) ? nil : state.contents[entity][index],
                                   generation: contentGeneration,
                                   mayBePlaceholder: batch.placeholder[Int(entry.slot)] || state.madeElsewhere[entity].contains(entry.slot))
                let before = batch.remembered[Int(entry.slot)]
                if before?.pk != memory.pk || before?.content != memory.content || before?.mayBePlaceholder != memory.mayBePlaceholder {
                    pending[entity][batch.keys[Int(entry.slot)]] = memory
                }
            }
        }
    }

    /// A hash of what entry `index` gives: each field and link its mask sets, with its value
    /// (the linked row's number). The key is left out: it is the same for every entry of its
    /// slot, and an insert sets its bit where an update does not, so an update that gives
    /// every other field as the insert wrote it hashes alike, and is not staged again.
    private func contentHash(_ index: Int, of batch: EntityBatch, entity: Int, _ request: BatchInsertRequest,
                             linked: (Int, Int, Int32) -> Int64?) -> Int {
        let entry = batch.folded[index]
        let key = plans[entity].keyPosition
        var hasher = FieldHasher()
        request.text.withUnsafeBytes { text in
            let info = plans[entity].info
            for position in 0..<entry.cellCount where position != key && batch.isSet(position, entry: index) && !info.isLineage(position) {
                hasher.mix(batch.cell(position, of: index, request), at: position, request, text: text)
            }
        }
        for number in 0..<batch.linkCount where batch.isSet(entry.cellCount + number, entry: index) {
            hasher.mix(UInt64(entry.cellCount + number) << 8 | 5)
            hasher.mix(linked(entity, number, batch.links[index * batch.linkCount + number]).map { UInt64(bitPattern: $0) } ?? 0)
        }
        return Int(bitPattern: UInt(hasher.value))
    }

    /// The last number this session drew from the entity's identity sequence; `taking`
    /// draws one first (a COPY that the table numbers then draws the ones after it).
    private func lastNumber(_ entity: Int, taking: Bool) throws(PostgresError) -> Int64 {
        let rows = try connection.execute("SELECT \(taking ? "nextval" : "currval")(\(statements[entity].sequence))")
        return Int64(rows[0, 0] ?? "") ?? 0
    }

    /// The numbers the table gave the rows `entries` just copied, after `first` was drawn:
    /// the run after it when this session drew them one after another (alone on the
    /// sequence, the usual case), else found by their keys.
    private func tableNumbered(_ entries: [Int], of batch: EntityBatch, entity: Int, after first: Int64) throws(PostgresError) -> [Int64] {
        let last = try lastNumber(entity, taking: false)
        if last - first == Int64(entries.count) { return Array((first + 1)...last) }
        let keys = entries.compactMap { index -> String? in
            let slot = batch.folded[index].slot
            return slot < 0 ? nil : batch.keys[Int(slot)].text
        }
        guard let existing = statements[entity].existing else { return [] }
        let found = try connection.execute(existing, [Self.arrayLiteral(keys)])
        return (0..<found.count).compactMap { found[$0, 1].flatMap { Int64($0) } }
    }

    /// The properties entry `index` gives (its mask), its key left out: what history names for its update.
    private func givenProperties(_ index: Int, of batch: EntityBatch, entity: Int) -> [String] {
        let info = plans[entity].info
        var names: [String] = []
        for position in info.attributeNames.indices where position != plans[entity].keyPosition && batch.isSet(position, entry: index) {
            names.append(info.attributeNames[position])
        }
        for (number, link) in info.toOneColumns.enumerated() where batch.isSet(info.attributeNames.count + number, entry: index) {
            names.append(info.relationships[link.relationship].relationship.name)
        }
        return names
    }
}
