import IngestJSON
#if canImport(Glibc)
import Glibc
#endif

/// A file held with flock(2) that names its holder: what `ImportLock` and
/// `ChunkDirectoryLock` are made of. The kernel drops the lock when its holder dies, however
/// it dies, so a file left by a dead process is simply taken over. A link of the lock's name
/// is never followed (`O_NOFOLLOW`): truncating it would empty the file it names.
final class LockFile {
    let path: String
    private var descriptor: Int32

    /// Opens (or makes) the lock file; takes nothing yet.
    /// - Throws: `IOError` when it cannot be opened (a link of its name: ELOOP).
    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw IOError(errno: errno, operation: "open", path: path) }
    }

    deinit { release() }

    /// What the file holds now (its holder's name, as `replaceContents` wrote it).
    var contents: [UInt8] { Self.read(descriptor) }

    /// The first 4 KiB of the open file `descriptor` (a holder's name is shorter).
    static func read(_ descriptor: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer[0..<count]) : []
    }

    /// Takes the lock without waiting: false when another process holds it.
    /// - Throws: `IOError` when flock fails for another reason.
    func tryLock() throws -> Bool {
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            guard errno == EWOULDBLOCK else { throw IOError(errno: errno, operation: "lock", path: path) }
            return false
        }
        return true
    }

    /// Writes the holder's name in place of what was there.
    /// - Throws: `IOError` when it cannot be written.
    func replaceContents(_ bytes: [UInt8]) throws {
        guard ftruncate(descriptor, 0) == 0,
              bytes.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            throw IOError(errno: errno, operation: "write", path: path)
        }
    }

    /// Lets the lock go, emptying the file when `clear`; the file stays (removing it could let
    /// two processes each lock a different file of the same name).
    func release(clear: Bool = false) {
        guard descriptor >= 0 else { return }
        if clear { _ = ftruncate(descriptor, 0) }
        // Unlocked explicitly: a child forked meanwhile (before its exec closed the copy)
        // shares the open file and would keep a lock that only closing gives back.
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }
}
