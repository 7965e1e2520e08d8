import GRDB
import GRDBSQLite

/// Finding related rows before the write: the coordinator's key cache first, then one
/// lookup per missing key on a reader, so the write transaction only binds and steps.
extension BatchInserter {
    /// Each related row's stored row (0: not known yet), from the coordinator's key cache
    /// or looked up on a reader for the keys the cache lacks, before the write
    /// transaction, so the writer holds its lock only to bind and step. Also each
    /// unresolved related row's key, for the write to find or create.
    func resolve(_ request: BatchInsertRequest) throws -> (resolved: [Int64], keys: [Value?]) {
        var resolved = [Int64](repeating: 0, count: request.rows.count)
        var misses: [Int] = []
        request.text.withUnsafeBytes { text in
            coordinator.keyCache.withLock { cache in
                var scratch = KeyBytes()
                for (index, row) in request.rows.enumerated() where row.mode == .findOrCreate {
                    let plan = plans[row.entity]
                    guard let position = plan.keyPosition,
                          scratch.cell(entity: row.entity, request.cells[row.firstCell + position], type: plan.info.attributeTypes[position],
                                       request: request, text: text) else { continue }
                    if let pk = scratch.bytes.withUnsafeBytes({ cache.row(for: $0) }) { resolved[index] = pk } else { misses.append(index) }
                }
            }
        }
        var keys = [Value?](repeating: nil, count: request.rows.count)
        guard !misses.isEmpty else { return (resolved, keys) }
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
                let statement = try db.cachedStatement(sql: plans[entity].info.uniqueLookupSQL[0]).sqliteStatement
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
        return (resolved, keys)
    }

    /// Puts rows found or made into the coordinator's key cache.
    func remember(_ rows: [[Value: Int64]]) {
        guard rows.contains(where: { !$0.isEmpty }) else { return }
        coordinator.keyCache.withLock { cache in
            var scratch = KeyBytes()
            for (entity, keys) in rows.enumerated() {
                for (key, pk) in keys {
                    scratch.value(entity: entity, key)
                    scratch.bytes.withUnsafeBytes { cache.insert($0, row: pk) }
                }
            }
        }
    }
}
