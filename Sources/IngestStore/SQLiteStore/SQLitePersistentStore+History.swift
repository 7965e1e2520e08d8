import Foundation

/// SQLite's history positions: AUTOINCREMENT numbers each transaction, and each token
/// carries the fingerprint of the transaction before it, so a store restored from a backup
/// or replaced by a copy is told from the one the token was taken on.
extension SQLitePersistentStore {
    func currentHistoryToken(_ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryToken {
        let next = try Self.nextPosition(connection)
        let purged = try PersistentStoreCoordinator.metadataText(HistoryLog.purgedKey, connection).flatMap { Int64($0) }
        return HistoryToken(storeID: scope.storeID, position: next,
                            fingerprint: try Self.fingerprint(before: next, purged: purged, scope, connection))
    }

    func historyTransactions(after token: HistoryToken?, purged: Int64?, limit: Int,
                             _ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryFetch {
        let storeID = scope.storeID
        let start = token?.position ?? purged ?? 0
        let transactions = try HistoryLog.read("position >= ?", [.int(start)], limit: limit, schema: scope.schema, storeID: storeID,
                                               token: { HistoryToken(storeID: storeID, position: $0 + 1, fingerprint: $1) }, connection)
        // This read keeps the WAL from being restarted while its frames are flushed.
        if !transactions.isEmpty { makeSeenHistoryDurable() }
        if let last = transactions.last { return HistoryFetch(transactions: transactions, token: last.token) }
        return HistoryFetch(transactions: [], token: try token ?? HistoryToken(
            storeID: storeID, position: start, fingerprint: try Self.fingerprint(before: start, purged: purged, scope, connection)))
    }

    /// A token ahead of the next position, or whose fingerprint is not the store's at its
    /// place, means the store went back: positions the consumer was given are reused.
    func checkHistoryPlace(of token: HistoryToken, purged: Int64?, _ scope: HistoryScope, _ connection: StoreConnection) throws {
        let path = scope.path
        let next = try Self.nextPosition(connection)
        guard token.position <= next else {
            throw StoreError.history("token \(token) is ahead of \(path)'s history (its next position is \(next)): "
                + "the store was restored from a backup or replaced by a copy since the token was taken; " + HistoryScope.afresh)
        }
        guard let fingerprint = token.fingerprint else { return }
        let kept = try Self.fingerprint(before: token.position, purged: purged, scope, connection)
        // A purge made before fingerprints kept none for its horizon: nothing to compare.
        if kept == nil, token.position == purged { return }
        guard kept == fingerprint else {
            throw StoreError.history("token \(token) does not match \(path)'s history at position \(token.position - 1): "
                + "the store was restored from a backup or replaced by a copy since the token was taken; " + HistoryScope.afresh)
        }
    }

    func isOwnHistoryToken(_ token: HistoryToken) -> Bool { token.snapshot == nil }

    func historyHorizon(before position: Int64, purged: Int64, _ scope: HistoryScope, _ connection: StoreConnection) throws -> String? {
        try Self.fingerprint(before: position, purged: purged, scope, connection)
    }

    func keepHistoryHorizon(_ fingerprint: String?, _ connection: StoreConnection) throws {
        let table = quoted(PersistentStoreCoordinator.metadataTable)
        if let fingerprint {
            try connection.execute("INSERT INTO \(table) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   [.string(HistoryLog.purgedFingerprintKey), .string(fingerprint)])
        } else {
            try connection.execute("DELETE FROM \(table) WHERE key = ?", [.string(HistoryLog.purgedFingerprintKey)])
        }
    }

    /// The position the next history transaction will take (AUTOINCREMENT's sequence: the
    /// highest ever given, even when a purge emptied the table, plus one).
    private static func nextPosition(_ connection: StoreConnection) throws -> Int64 {
        (try connection.int64("SELECT seq FROM sqlite_sequence WHERE name = ?", [.string(HistoryLog.transactionsTable)]) ?? 0) + 1
    }

    /// The fingerprint of the transaction before `position`, from its row, or for the
    /// horizon of the last purge (which deleted that row) as the purge kept it; nil when
    /// neither has it.
    private static func fingerprint(before position: Int64, purged: Int64?, _ scope: HistoryScope, _ connection: StoreConnection) throws -> String? {
        if position - 1 >= (purged ?? 0) { return try HistoryLog.fingerprint(at: position - 1, connection) }
        guard position == purged else { return nil }
        return try PersistentStoreCoordinator.metadataText(HistoryLog.purgedFingerprintKey, connection)
    }
}
