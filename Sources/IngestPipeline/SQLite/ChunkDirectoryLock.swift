import Foundation
import IngestJSON
#if canImport(Glibc)
import Glibc
#endif

/// One import per chunk directory: `DIR/.ingest.lock`, held with flock(2) for the run's life
/// and naming the store that holds it. Two stores given one `--chunks` directory would each
/// take the other's files for their own; the second is refused before it records anything.
/// The kernel drops the lock when its holder dies, however it dies.
final class ChunkDirectoryLock {
    static let fileName = ".ingest.lock"

    let path: String
    private let file: LockFile

    /// Takes the lock of `directory` (made when missing) for `store`.
    /// - Throws: `ImportError` naming the store that holds it; `IOError` when the directory
    ///   or its lock file cannot be made.
    init(directory: String, store: String) throws {
        try FileOps.makeDirectory(directory)
        path = directory + "/" + Self.fileName
        file = try LockFile(path: path)
        guard try file.tryLock() else {
            let holder = file.contents
            throw ImportError("the chunk directory \(directory) is in use by an import into \(holder.isEmpty ? "another store" : String(decoding: holder, as: UTF8.self)): give this import a --chunks directory of its own")
        }
        try file.replaceContents(Array((store.hasPrefix("/") ? store : FileManager.default.currentDirectoryPath + "/" + store).utf8))
    }

    /// Lets the lock go; the file stays for `Importer.deleteChunks` to remove with the chunks.
    func release() { file.release() }

}
