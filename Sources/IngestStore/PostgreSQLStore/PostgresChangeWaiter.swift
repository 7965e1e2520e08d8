import Foundation

/// Waits for another commit to a PostgreSQL store: LISTEN for the saves' NOTIFY on a
/// connection of its own, or `seconds` (a transaction held back behind an older one that
/// then rolls back sends no notice, so the stream fetches anyway).
final class PostgresChangeWaiter: StoreChangeWaiter {
    private let connection: PostgresConnection

    init(url: PostgresURL) throws {
        connection = try PostgresPool.connect(url)
        do { try connection.execute("LISTEN \(HistoryLog.channel)") } catch { throw StoreError.postgres(error) }
    }

    /// - Throws: `StoreError.postgres` when the connection broke.
    func wait(seconds: Double, _ follower: HistoryFollower) throws {
        // In slices, so that a stopped stream's thread and connection end soon, whatever the interval.
        var left = HistoryWaiter.clamped(seconds)
        while left > 0, !follower.isStopped {
            let slice = min(left, HistoryWaiter.pathCheckSeconds)
            do {
                if try connection.waitForNotification(seconds: slice) { return }
            } catch {
                throw StoreError.postgres(error)
            }
            left -= slice
        }
    }
}
