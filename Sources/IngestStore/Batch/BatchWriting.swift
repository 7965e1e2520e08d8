/// A backend's half of the batch write: its statements and its transactions. What the
/// backends share is decided once, beside this protocol in the Batch folder: which
/// entities the path writes and by which rule (`BatchEntityPlan`), which records are
/// rejected for missing values and which of their rows nothing would link
/// (`BatchInsertRequest+Problems`, `+Unlinked`), how a record's outcome is counted
/// (`BatchResult.countStored`), and how a save runs: one transaction, tried again when it
/// loses to a concurrent one, written record by record when the store refuses a
/// record's data (`BatchSave`). A backend supplies only how rows become statements:
/// SQLite's `BatchInserter` one statement a row under the write lock, PostgreSQL's
/// `PostgresBatchWriter` one `COPY` and one `UPDATE` per entity.
///
/// One writer belongs to one worker (or one connection): its methods are called from one
/// thread at a time, `writeRows` and `finish` only inside `inTransaction`.
package protocol BatchWriting: BatchRequestMaking {
    /// A request with what could be learned of it before the write transaction.
    associatedtype Prepared: Sendable

    /// Looks up or works out what the write needs and can learn before it holds the
    /// store's write lock (related objects' rows, key slots).
    /// - Throws: `StoreError` when the store cannot be read.
    func prepare(_ request: BatchInsertRequest) throws -> Prepared

    /// The request `prepared` was made from.
    func request(of prepared: Prepared) -> BatchInsertRequest

    /// `prepared` brought up to date just before a transaction writes it (what other
    /// writers committed since it was prepared); by default, unchanged.
    func settle(_ prepared: Prepared) -> Prepared

    /// Runs `body` in one write transaction: committed when it returns, rolled back when
    /// it throws.
    /// - Throws: what `body` throws; the store's failure to begin or commit.
    func inTransaction<T>(_ body: () throws -> T) throws -> T

    /// Runs `body` behind a savepoint of the open transaction: what it wrote is undone
    /// when it throws, and the transaction goes on.
    /// - Throws: what `body` throws; the store's failure to make or release the savepoint.
    func behindSavepoint<T>(_ body: () throws -> T) throws -> T

    /// Writes the rows of `prepared` (of its records `only`, by index in the request)
    /// in the open transaction, and returns what it wrote. Records that cannot be written
    /// (a new row lacks a required value, a value the store cannot hold) are left out
    /// whole and listed in the result's `rejected`.
    /// - Throws: the store's failures; those `isAboutData` says are about a record's data
    ///   make the caller write the records one at a time.
    func writeRows(_ prepared: Prepared, only: [Int]?) throws -> BatchResult

    /// The save's last writes, in the open transaction: the history of what `result`
    /// changed, by `author`, and the store metadata entries `metadata`.
    /// - Throws: the store's failures.
    func finish(_ result: BatchResult, metadata: [String: String], author: String) throws

    /// The transaction committed: what its writes taught holds from now on.
    func didCommit()
    /// The transaction rolled back: forget what its writes would have taught.
    func didRollBack()

    /// Whether `error` is about the data of the records written (a value out of a
    /// column's range, a constraint), so that writing them one at a time leaves out only
    /// the records at fault.
    func isAboutData(_ error: any Error) -> Bool
    /// Whether `error` says the transaction lost to a concurrent one (a deadlock, a key
    /// made elsewhere at the same moment), so that running it again may succeed.
    func isTransactionConflict(_ error: any Error) -> Bool
}

extension BatchWriting {
    package func settle(_ prepared: Prepared) -> Prepared { prepared }
}
