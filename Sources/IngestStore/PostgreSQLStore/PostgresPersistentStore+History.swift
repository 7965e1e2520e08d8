import Foundation

/// PostgreSQL's history positions: each transaction's ID (`pg_current_xact_id`), which
/// concurrent writers take out of commit order. A token is a snapshot: what it sees was
/// given, what it does not see comes next; a long fetch pages through one target snapshot.
extension PostgresPersistentStore {
    func currentHistoryToken(_ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryToken {
        try Self.token(scope, snapshot: try currentSnapshot(connection))
    }

    func historyTransactions(after token: HistoryToken?, purged: Int64?, limit: Int,
                             _ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryFetch {
        let storeID = scope.storeID
        // Given so far: what the token's snapshot sees (nothing, for a first fetch, but
        // what a purge removed), and of a page, what its snapshot sees up to its position.
        let horizon = max(purged ?? 1, 1)
        let base = token?.snapshot ?? "\(horizon):\(horizon):"
        let target = try token?.page?.snapshot ?? currentSnapshot(connection, previous: token?.snapshot)
        let after = token?.page?.after ?? -1
        func read(base: String, target: String, after: Int64, limit: Int) throws -> [HistoryTransaction] {
            try HistoryLog.read("""
                position >= ? AND NOT pg_visible_in_snapshot(position::text::xid8, CAST(? AS pg_snapshot))
                AND pg_visible_in_snapshot(position::text::xid8, CAST(? AS pg_snapshot)) AND position > ?
                """, [.int(HistoryToken.xmin(of: base) ?? 0), .string(base), .string(target), .int(after)],
                limit: limit, schema: scope.schema, storeID: storeID,
                token: { position, _ in HistoryToken(storeID: storeID, snapshot: base, page: .init(snapshot: target, after: position))! },
                connection)
        }
        var transactions = try read(base: base, target: target, after: after, limit: limit)
        if transactions.count == limit, let last = transactions.last { return HistoryFetch(transactions: transactions, token: last.token) }
        // A page of an earlier fetch ran out: what committed since comes in the same fetch.
        var seen = target
        if token?.page != nil {
            let now = try currentSnapshot(connection, previous: target)
            let more = try read(base: target, target: now, after: -1, limit: limit - transactions.count)
            transactions += more
            if transactions.count == limit, let last = transactions.last { return HistoryFetch(transactions: transactions, token: last.token) }
            seen = now
        }
        return HistoryFetch(transactions: transactions, token: try Self.token(scope, snapshot: seen))
    }

    /// Transaction IDs only grow: a snapshot with one the server has not given yet was
    /// taken on another server, or before a restore took the server's history back.
    func checkHistoryPlace(of token: HistoryToken, purged: Int64?, _ scope: HistoryScope, _ connection: StoreConnection) throws {
        let xmax = try connection.int64("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint") ?? 0
        let xmin = max(token.snapshot.flatMap(HistoryToken.xmin(of:)) ?? 0, token.page.flatMap { HistoryToken.xmin(of: $0.snapshot) } ?? 0)
        guard xmin <= xmax else {
            throw StoreError.history("token \(token) is ahead of \(scope.path)'s history (its next transaction is \(xmax)): "
                + "the token is of another server, or the database was restored from a backup since the token was taken; " + HistoryScope.afresh)
        }
    }

    func isOwnHistoryToken(_ token: HistoryToken) -> Bool { token.snapshot != nil }

    /// Snapshots need no fingerprint: a restore shows in transaction IDs.
    func historyHorizon(before position: Int64, purged: Int64, _ scope: HistoryScope, _ connection: StoreConnection) throws -> String? {
        nil
    }

    func keepHistoryHorizon(_ fingerprint: String?, _ connection: StoreConnection) throws {}

    /// The snapshot this transaction reads in, made durable first. The fetch gives the
    /// transactions it sees, and its token claims every transaction it saw ended: with
    /// commits that do not wait for the disk (importers'), a server crash could take such
    /// a commit back after a consumer was given it, or hand its ID to a later transaction
    /// the token would then skip. Not needed when the snapshot is `previous` (an idle poll:
    /// nothing ended since), nor on a standby (it cannot write).
    private func currentSnapshot(_ connection: StoreConnection, previous: String? = nil) throws -> String {
        var snapshot = ""
        var standby = false
        try connection.query("SELECT pg_current_snapshot()::text, pg_is_in_recovery()", cached: false) { row in
            snapshot = row.value(.string, 0)?.stringValue ?? ""
            standby = row.value(.bool, 1)?.boolValue ?? false
        }
        guard !standby, previous != snapshot else { return snapshot }
        try makeSeenHistoryDurable()
        return snapshot
    }

    private static func token(_ scope: HistoryScope, snapshot: String) throws -> HistoryToken {
        guard let token = HistoryToken(storeID: scope.storeID, snapshot: snapshot) else {
            throw StoreError.history("the server gave a snapshot Ingest cannot read: \(snapshot)")
        }
        return token
    }
}
