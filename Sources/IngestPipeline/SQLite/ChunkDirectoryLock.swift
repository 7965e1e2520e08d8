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
    private var descriptor: Int32

    /// Takes the lock of `directory` (made when missing) for `store`.
    /// - Throws: `ImportError` naming the store that holds it; `IOError` when the directory
    ///   or its lock file cannot be made.
    init(directory: String, store: String) throws {
        try FileOps.makeDirectory(directory)
        path = directory + "/" + Self.fileName
        // O_NOFOLLOW: a link of that name is not Ingest's lock file.
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw IOError(errno: errno, operation: "open", path: path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            close(descriptor)
            guard failure == EWOULDBLOCK else { throw IOError(errno: failure, operation: "lock", path: path) }
            let holder = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : "another store"
            throw ImportError("the chunk directory \(directory) is in use by an import into \(holder): give this import a --chunks directory of its own")
        }
        let name = Array((store.hasPrefix("/") ? store : FileManager.default.currentDirectoryPath + "/" + store).utf8)
        guard ftruncate(descriptor, 0) == 0,
              name.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == name.count else {
            let failure = errno
            close(descriptor)
            throw IOError(errno: failure, operation: "write", path: path)
        }
    }

    /// Lets the lock go; the file stays for `Importer.deleteChunks` to remove with the chunks.
    func release() {
        guard descriptor >= 0 else { return }
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
