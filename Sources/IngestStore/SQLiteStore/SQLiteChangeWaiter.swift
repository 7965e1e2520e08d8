import Foundation
import CSQLite

/// Waits for another commit to a SQLite store file: `PRAGMA data_version` on a connection
/// of its own. It also watches that the store's path still leads to the file it opened,
/// holding the store it follows: the coordinator would go on reading the file it opened,
/// which no one writes any more.
final class SQLiteChangeWaiter: StoreChangeWaiter {
    private let db: OpaquePointer
    private var version: Int64
    private let path: String
    private let storeID: UUID
    /// The device and inode of the file the connection opened.
    private let file: (device: UInt64, inode: UInt64)

    init(path: String, storeID: UUID) throws {
        self.path = path
        self.storeID = storeID
        var opened: OpaquePointer?
        guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let opened else {
            sqlite3_close(opened)
            throw StoreError.database("cannot open \(path) to follow its history")
        }
        db = opened
        sqlite3_busy_timeout(db, 5_000)
        version = Self.dataVersion(db)
        // SQLite opens the file at once: what the path leads to now is what it opened.
        var status = stat()
        guard stat(path, &status) == 0 else {
            sqlite3_close(db)
            throw StoreError.history(Self.deleted(path))
        }
        file = (UInt64(status.st_dev), UInt64(status.st_ino))
        try checkStoreID()
    }

    deinit {
        sqlite3_close(db)
    }

    private static func dataVersion(_ db: OpaquePointer) -> Int64 {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK, sqlite3_step(statement) == SQLITE_ROW else { return -1 }
        return sqlite3_column_int64(statement, 0)
    }

    private static func deleted(_ path: String) -> String {
        "\(path) was deleted while its history was being followed"
    }

    /// Throws when the store's path no longer leads to the file this waiter opened.
    private func checkPath() throws {
        var status = stat()
        guard stat(path, &status) == 0 else { throw StoreError.history(Self.deleted(path)) }
        guard (UInt64(status.st_dev), UInt64(status.st_ino)) == file else {
            throw StoreError.history("\(path) was replaced by another file while its history was being followed (a restore, or a new store made there)")
        }
    }

    /// Throws when the file holds another store than the one followed (copied over it in place).
    private func checkStoreID() throws {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        let sql = "SELECT value FROM \(quoted(PersistentStoreCoordinator.metadataTable)) WHERE key = '_storeID'"
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, sqlite3_step(statement) == SQLITE_ROW,
              let text = sqlite3_column_text(statement, 0) else {
            throw StoreError.history("\(path) holds no store ID any more while its history is being followed")
        }
        // The ID is kept as a JSON string.
        let id = String(cString: text).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard UUID(uuidString: id) == storeID else {
            throw StoreError.history("\(path) holds store \(id.lowercased()) now, not the store followed (\(storeID.uuidString.lowercased()))")
        }
    }

    /// - Throws: `StoreError.history` when the store's path no longer leads to the store followed.
    func wait(seconds: Double, _ follower: HistoryFollower) throws {
        let seconds = HistoryWaiter.clamped(seconds)
        var waited = 0.0
        while !follower.isStopped {
            try checkPath()
            // A save through this coordinator signals at once; another process's shows in data_version,
            // read every `seconds`; the path is checked at least every `pathCheckSeconds`.
            let slice = min(seconds - waited, HistoryWaiter.pathCheckSeconds)
            let woken = follower.wake.wait(timeout: .now() + slice) == .success
            waited += slice
            guard woken || waited >= seconds else { continue }
            waited = 0
            let now = Self.dataVersion(db)
            if woken || now != version {
                try checkPath()
                if now != version { try checkStoreID() }
                version = now
                return
            }
        }
    }
}

/// Waits for the next save to a store in memory: only its own coordinator reaches it, and
/// every save through that coordinator wakes the follower.
final class InMemoryChangeWaiter: StoreChangeWaiter {
    func wait(seconds: Double, _ follower: HistoryFollower) throws {
        while !follower.isStopped {
            // In slices, so that a stopped stream's thread ends soon, whatever the interval.
            if follower.wake.wait(timeout: .now() + min(HistoryWaiter.clamped(seconds), HistoryWaiter.pathCheckSeconds)) == .success { return }
        }
    }
}
