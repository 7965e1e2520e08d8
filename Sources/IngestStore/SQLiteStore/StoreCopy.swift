import Foundation

extension PersistentStoreCoordinator {
    /// Copies the SQLite store at `path` to `copy` (a new file), whole and consistent even
    /// while another process writes the store (SQLite's online backup), for a dry run to
    /// import into. The store is only read; a store that does not exist yet (or is empty)
    /// leaves `copy` unmade.
    /// - Throws: `StoreError.notAStore` when `path` is not a store; `StoreError` when
    ///   reading it or writing `copy` fails (a full disk, say).
    package static func copySQLiteStore(at path: String, to copy: String) throws {
        try checkIsStoreOrNew(at: path, writing: false)
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 0 else { return }
        do {
            let source = try SQLiteDatabase(path: path, readOnly: true, busyTimeout: 30)
            let target = try SQLiteDatabase(path: copy, readOnly: false, busyTimeout: nil)
            try source.backup(to: target)
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error, path: path)
        }
    }
}
