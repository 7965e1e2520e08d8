
/// SQLite's half of `BatchSave`: transactions under the coordinator's write lock,
/// savepoints, and the key cache and save notice kept in step with what commits.
extension BatchInserter {
    /// What the open transaction's writes did: handed to the key cache and the coordinator's
    /// observers when it commits, forgotten when it rolls back.
    struct OpenWrites {
        /// The request the transaction writes (`settle` made it the current one).
        var request: BatchInsertRequest?
        var writes: [Written] = []
        /// Records whose write threw (the store refused their data): the cache forgets them.
        var failed: [Int] = []
        var sequence = 0
        var observed = false
        var history = false
    }

    package func request(of prepared: Prepared) -> BatchInsertRequest { prepared.request }

    /// Marks the related objects the request repeats exactly since their last write as
    /// needing none: the key cache says what each row holds once every earlier write
    /// committed (`skipUnchanged`).
    package func settle(_ prepared: Prepared) -> Prepared {
        var resolved = prepared.resolved
        skipUnchanged(prepared.request, contents: prepared.contents, resolved: &resolved)
        open = OpenWrites(request: prepared.request)
        return Prepared(request: prepared.request, resolved: resolved, keys: prepared.keys, contents: prepared.contents)
    }

    package func inTransaction<T>(_ body: () throws -> T) throws -> T {
        open.observed = coordinator.hasSaveObservers
        open.history = coordinator.recordsHistory
        // The inserter is used by one thread; the write closure runs on it, under the lock.
        nonisolated(unsafe) let inserter = self
        return try coordinator.write { db in
            inserter.database = db
            defer { inserter.database = nil }
            return try body()
        }
    }

    package func behindSavepoint<T>(_ body: () throws -> T) throws -> T {
        do {
            return try openDatabase().inSavepoint(body)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: coordinator.path)
        }
    }

    package func writeRows(_ prepared: Prepared, only: [Int]?) throws -> BatchResult {
        do {
            let written = try write(prepared, only: only, observed: open.observed, history: open.history, try openDatabase())
            open.writes.append(written)
            return written.result
        } catch {
            open.failed += only ?? Array(prepared.request.records.indices)
            throw error
        }
    }

    package func finish(_ result: BatchResult, metadata: [String: String], author: String) throws {
        open.sequence = try coordinator.finishSave(try openDatabase(), metadata: metadata,
                                                   history: open.history ? result.history : nil, author: author)
    }

    package func didCommit() {
        let done = open
        open = OpenWrites()
        guard let request = done.request else { return }
        for written in done.writes {
            forget(records: written.leftOut, of: request)
            remember(written.learned, written: written.writtenFields)
        }
        forget(records: done.failed, of: request)
        guard done.observed else { return }
        let storeID = coordinator.storeID
        func ids(_ rows: KeyPath<Written, [[Int64]]>) -> Set<ObjectID> {
            var ids = Set<ObjectID>(minimumCapacity: done.writes.reduce(0) { $0 + $1[keyPath: rows].reduce(0) { $0 + $1.count } })
            for written in done.writes {
                for (entity, keys) in written[keyPath: rows].enumerated() {
                    let name = plans[entity].info.rootName
                    for key in keys { ids.insert(ObjectID(storeID: storeID, entityName: name, key: .permanent(key))) }
                }
            }
            return ids
        }
        coordinator.post(SaveNotice(inserted: ids(\.inserted), updated: ids(\.updated), deleted: [],
                                    sequence: done.sequence, contextName: "batch insert", contextIdentity: nil))
    }

    package func didRollBack() {
        // A failed write leaves the rows as they were, which the cache no longer knows.
        if let request = open.request { forget(records: Array(request.records.indices), of: request) }
        open = OpenWrites()
    }

    package func isAboutData(_ error: any Error) -> Bool {
        (error as? StoreError)?.isAboutData ?? false
    }

    package func isTransactionConflict(_ error: any Error) -> Bool {
        (error as? StoreError)?.isTransactionConflict ?? false
    }

    private func openDatabase() throws -> SQLiteDatabase {
        guard let database else { fatalError("BatchInserter: a write outside inTransaction") }
        return database
    }
}
