import Foundation
import GRDB

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
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(30)
            let source = try DatabaseQueue(path: path, configuration: configuration)
            let target = try DatabaseQueue(path: copy)
            try source.backup(to: target)
            try target.close()
            try source.close()
        } catch let error as DatabaseError {
            throw StoreError.sqlite(error, path: path)
        }
    }
}
