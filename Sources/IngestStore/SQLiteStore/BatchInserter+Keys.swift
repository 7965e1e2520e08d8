import Synchronization
import CSQLite

/// Finding related rows before the write: the coordinator's key cache first, then one
/// lookup per missing key on a reader, so the write transaction only binds and steps.
extension BatchInserter {
    /// Each related row's stored row (0: not known yet), from the coordinator's key cache
    /// or looked up on a reader for the keys the cache lacks, before the write
    /// transaction, so the writer holds its lock only to bind and step. Also each
    /// unresolved related row's key, for the write to find or create.
    ///
    /// A related object the record describes (an `upsert` row that is not a record's own)
    /// is resolved too when the cache says its last write gave exactly these fields: it
    /// needs no write. `contents` holds each such row's hash of its given fields (0: none).
    func resolve(_ request: BatchInsertRequest) throws -> (resolved: [Int64], keys: [Value?], contents: [UInt64]) {
        var resolved = [Int64](repeating: 0, count: request.rows.count)
        var contents = [UInt64](repeating: 0, count: request.rows.count)
        var misses: [Int] = []
        var isOwn = [Bool](repeating: false, count: request.rows.count)
        for record in request.records where record.firstRow < request.rows.count { isOwn[record.firstRow] = true }
        request.text.withUnsafeBytes { text in
            for (index, row) in request.rows.enumerated() where row.mode == .upsert && !isOwn[index] {
                contents[index] = contentHash(request, row, text: text) ?? 0
            }
            coordinator.keyCache.withLock { cache in
                var scratch = KeyBytes()
                for (index, row) in request.rows.enumerated() where row.mode == .findOrCreate {
                    let plan = plans[row.entity]
                    guard let position = plan.keyPosition,
                          scratch.cell(entity: row.entity, request.cells[row.firstCell + position], type: plan.info.attributeTypes[position],
                                       request: request, text: text) else { continue }
                    if let entry = scratch.bytes.withUnsafeBytes({ cache.entry(for: $0) }) { resolved[index] = entry.row } else { misses.append(index) }
                }
            }
        }
        var keys = [Value?](repeating: nil, count: request.rows.count)
        guard !misses.isEmpty else { return (resolved, keys, contents) }
        var missing: [Int: Set<Value>] = [:]
        for index in misses {
            let row = request.rows[index]
            let position = plans[row.entity].keyPosition!
            keys[index] = request.value(request.cells[row.firstCell + position], type: plans[row.entity].info.attributeTypes[position])
            missing[row.entity, default: []].insert(keys[index]!)
        }
        let found = try coordinator.read { db -> [[Value: Int64]] in
            var found = [[Value: Int64]](repeating: [:], count: plans.count)
            for (entity, keys) in missing {
                let statement = try db.cachedStatement(sql: plans[entity].info.uniqueLookupSQL[0])
                for key in keys {
                    SQLiteValues.bind(key, to: statement, at: 1)
                    if sqlite3_step(statement) == SQLITE_ROW { found[entity][key] = sqlite3_column_int64(statement, 0) }
                    sqlite3_reset(statement)
                }
            }
            return found
        }
        remember(found)
        for index in misses {
            if let pk = found[request.rows[index].entity][keys[index]!] { resolved[index] = pk }
        }
        return (resolved, keys, contents)
    }

    /// Marks the related objects `request` repeats exactly as needing no write (their row
    /// in `resolved`). Call it when every earlier write has reached the key cache (commits
    /// in order): the cache then says what each row holds. The cache learns at once what
    /// each row will hold after this request (in write order: records in turn, each
    /// record's rows from the last), so a row repeated after a change in the same request
    /// is still written; `forget` undoes it for records the write leaves out.
    func skipUnchanged(_ request: BatchInsertRequest, contents: [UInt64], resolved: inout [Int64]) {
        guard contents.contains(where: { $0 != 0 }) else { return }
        request.text.withUnsafeBytes { text in
            coordinator.keyCache.withLock { cache in
                var scratch = KeyBytes()
                for recordIndex in request.records.indices {
                    for index in request.rowRange(ofRecord: recordIndex).reversed() {
                        let row = request.rows[index]
                        guard row.mode == .upsert else { continue }
                        guard let position = shapes[row.entity].keyPosition, let type = shapes[row.entity].keyType,
                              scratch.cell(entity: row.entity, request.cells[row.firstCell + position], type: type,
                                           request: request, text: text) else { continue }
                        let content = contents[index]
                        scratch.bytes.withUnsafeBytes { key in
                            guard let entry = cache.entry(for: key) else { return }
                            if content != 0 && entry.written == content {
                                resolved[index] = entry.row
                            } else {
                                cache.setWritten(key, content)
                            }
                        }
                    }
                }
            }
        }
    }

    /// The cache no longer knows what the rows of `records` (left out of a write) hold.
    func forget(records: [Int], of request: BatchInsertRequest) {
        guard !records.isEmpty else { return }
        request.text.withUnsafeBytes { text in
            coordinator.keyCache.withLock { cache in
                var scratch = KeyBytes()
                for recordIndex in records {
                    for index in request.rowRange(ofRecord: recordIndex) where request.rows[index].mode == .upsert {
                        let row = request.rows[index]
                        let plan = plans[row.entity]
                        guard let position = plan.keyPosition,
                              scratch.cell(entity: row.entity, request.cells[row.firstCell + position], type: plan.info.attributeTypes[position],
                                           request: request, text: text) else { continue }
                        scratch.bytes.withUnsafeBytes { cache.setWritten($0, 0) }
                    }
                }
            }
        }
    }

    /// A hash of the fields `row` gives (attribute positions and values; text hashed the
    /// same whether in place or kept as a value), or nil when it gives a to-one, whose
    /// target row is not known before the write.
    func contentHash(_ request: BatchInsertRequest, _ row: BatchInsertRequest.Row, text: UnsafeRawBufferPointer) -> UInt64? {
        let attributes = shapes[row.entity].attributes
        for link in 0..<shapes[row.entity].toOnes where request.isGiven(row: row, bit: attributes + link) { return nil }
        var hasher = FieldHasher()
        // Lineage is left out: a related object repeated field for field is not written again, its lineage kept.
        let lineage = shapes[row.entity].lineage.map { [$0.run, $0.chunk, $0.record] } ?? []
        for position in 0..<attributes where request.isGiven(row: row, bit: position) && !lineage.contains(position) {
            hasher.mix(request.cells[row.firstCell + position], at: position, request, text: text)
        }
        return hasher.value
    }

    /// Puts rows found or made into the coordinator's key cache, with the hash of the
    /// fields just written to them where `written` has one (0: no longer known).
    func remember(_ rows: [[Value: Int64]], written: [[Value: UInt64]] = []) {
        guard rows.contains(where: { !$0.isEmpty }) else { return }
        coordinator.keyCache.withLock { cache in
            var scratch = KeyBytes()
            for (entity, keys) in rows.enumerated() {
                for (key, pk) in keys {
                    scratch.value(entity: entity, key)
                    let fields = entity < written.count ? written[entity][key] : nil
                    scratch.bytes.withUnsafeBytes { cache.insert($0, row: pk, written: fields) }
                }
            }
        }
    }
}
