import Foundation

/// What a store's history code needs of its coordinator: the model's tables, the store's
/// identity (part of every token) and its name for messages.
struct HistoryScope {
    let schema: Schema
    let storeID: UUID
    let path: String

    /// What a consumer whose token no longer fits the store should do.
    static let afresh = "fetch the objects afresh and continue from the current token (coordinator.currentHistoryToken(), or the last line of ingest history)"
}

/// How a store numbers its history: SQLite gives each transaction the next position (and
/// fingerprints it, so a token tells a restored store); PostgreSQL uses transaction IDs,
/// read through snapshots. Everything else of the history (tables, rows, purges, the
/// stream) is shared.
protocol HistoryPositions {
    /// The token of "now", inside a `readingSnapshot`.
    func currentHistoryToken(_ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryToken

    /// The transactions after `token` (from the purge's horizon when nil), at most `limit`,
    /// and the token to fetch after next; `token` is already checked against the store.
    func historyTransactions(after token: HistoryToken?, purged: Int64?, limit: Int,
                             _ scope: HistoryScope, _ connection: StoreConnection) throws -> HistoryFetch

    /// Throws `StoreError.history` when `token` does not belong to the store's history as it
    /// is now (ahead of it, or taken before a restore).
    func checkHistoryPlace(of token: HistoryToken, purged: Int64?, _ scope: HistoryScope, _ connection: StoreConnection) throws

    /// Whether `token` is of this kind of store (a SQLite token names a position, a
    /// PostgreSQL one a snapshot).
    func isOwnHistoryToken(_ token: HistoryToken) -> Bool

    /// What a purge up to `position` keeps of the transaction before it, read before its
    /// rows are deleted (so that tokens at the horizon still tell a restore), or nil.
    func historyHorizon(before position: Int64, purged: Int64, _ scope: HistoryScope, _ connection: StoreConnection) throws -> String?

    /// Keeps (or, when nil, forgets) the purge horizon's fingerprint in the purge's transaction.
    func keepHistoryHorizon(_ fingerprint: String?, _ connection: StoreConnection) throws
}
