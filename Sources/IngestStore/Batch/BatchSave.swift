import Foundation

/// How a batch save runs, on every store: the one place for its transaction, its retries
/// and its record-by-record fallback. The backend (`BatchWriting`) only writes rows.
///
/// One save is one transaction: `before`, the rows, `after`, then the history and
/// metadata (`BatchWriting.finish`); nothing of it stays when any of them throws. A
/// transaction that loses to a concurrent one (a deadlock, a key another process made at
/// the same moment, a busy store) is rolled back and run again, after a pause that grows
/// with each attempt. When the store refuses a record's data (a value out of a column's
/// range, a second uniqueness constraint), the batch is written again one record at a
/// time, each behind a savepoint, so that only the records at fault are rejected, with
/// the store's reason.
package struct BatchSave<Writer: BatchWriting> {
    package let writer: Writer
    /// Attempts of one save before a transaction conflict is thrown to the caller.
    package var attempts = 20
    /// Told of each retry and each fallback to record-by-record writing (for the logs).
    package var onRetry: @Sendable (_ attempt: Int, _ error: any Error) -> Void = { _, _ in }
    package var onRecordByRecord: @Sendable (_ error: any Error) -> Void = { _ in }

    package init(_ writer: Writer) {
        self.writer = writer
    }

    /// Saves `prepared` by `author` in one transaction, with what `before` and `after` write
    /// in it: `before` runs first (a marker's compare-and-set, say); `after` is handed the
    /// rows' result (its `rejected` may be changed) and returns store metadata entries to
    /// commit with it. The result's `retries` and `lockedSeconds` say how the save went.
    /// - Throws: what `before` or `after` throws, a transaction conflict after `attempts`
    ///   tries, or the store's failure; nothing is written then.
    package func run(_ prepared: Writer.Prepared, author: String, before: () throws -> Void = {},
                     after: (inout BatchResult) throws -> [String: String] = { _ in [:] }) throws -> BatchResult {
        var attempt = 0
        while true {
            let settled = writer.settle(prepared)
            do {
                var locked = 0.0
                var result = try writer.inTransaction {
                    let start = DispatchTime.now().uptimeNanoseconds
                    defer { locked = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
                    try before()
                    var result = try writeAll(settled)
                    let metadata = try after(&result)
                    try writer.finish(result, metadata: metadata, author: author)
                    return result
                }
                writer.didCommit()
                result.lockedSeconds = locked
                result.retries = attempt
                return result
            } catch {
                writer.didRollBack()
                guard writer.isTransactionConflict(error), attempt + 1 < attempts else { throw error }
                attempt += 1
                onRetry(attempt, error)
                // A backoff (randomized, growing), not a poll: the conflicting save is given time to commit.
                Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.05) * Double(attempt))
            }
        }
    }

    /// The rows in one go; when the store refuses a record's data, one record at a time.
    private func writeAll(_ prepared: Writer.Prepared) throws -> BatchResult {
        do {
            return try writer.behindSavepoint { try writer.writeRows(prepared, only: nil) }
        } catch where writer.isAboutData(error) {
            onRecordByRecord(error)
        }
        let request = writer.request(of: prepared)
        var total = BatchResult()
        for index in 0..<request.recordCount {
            do {
                total.add(try writer.behindSavepoint { try writer.writeRows(prepared, only: [index]) })
            } catch where writer.isAboutData(error) {
                total.rejected.append(BatchRejection(record: request.recordNumber(index), reason: "\(error)"))
            }
        }
        return total
    }
}
