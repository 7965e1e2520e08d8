import Foundation
import IngestStore
import IngestJSON
#if canImport(Glibc)
import Glibc
#endif

/// One importer per store: `STORE.lock`, held with flock(2) for the run's life and
/// naming its holder (pid, host, start time). The kernel drops the lock when the holder
/// dies however it dies, so a lock file left by a dead process is simply taken over;
/// a live holder makes a second import refuse at once. Readers never take it.
final class ImportLock {
    struct Holder: Codable, Equatable {
        var pid: Int32
        var host: String
        var startedAt: String
    }

    let path: String
    /// Who held the lock before this run, if its file still named someone (a run that
    /// was killed): for the run's log.
    let previous: Holder?
    private var descriptor: Int32

    /// Takes the lock for `store`.
    /// - Throws: `ImportError` naming the live holder; `IOError` when the lock file
    ///   cannot be opened or written.
    init(store: String) throws {
        path = store + ".lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw IOError(errno: errno, operation: "open", path: path) }
        let recorded = Self.read(descriptor)
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            guard failure == EWOULDBLOCK else { throw IOError(errno: failure, operation: "lock", path: path) }
            let who = recorded.map { "pid \($0.pid) on \($0.host), started \($0.startedAt)" } ?? "a process that has not written its name yet"
            throw ImportError(.storeBusy(store: store, holder: who))
        }
        // Read again under the lock: what is there now was left by a holder that is gone.
        previous = Self.read(descriptor)
        let holder = Holder(pid: getpid(), host: HostName.current, startedAt: Date.now.ISO8601Format())
        let bytes = Array((try JSONEncoder().encode(holder)))
        guard ftruncate(descriptor, 0) == 0,
              bytes.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            let failure = errno
            close(descriptor)
            throw IOError(errno: failure, operation: "write", path: path)
        }
    }

    /// Lets the lock go; the file stays, empty (removing it could let two processes
    /// each lock a different file of the same name).
    func release() {
        guard descriptor >= 0 else { return }
        _ = ftruncate(descriptor, 0)
        // Unlocked explicitly: a child forked meanwhile (before its exec closed the copy)
        // shares the open file and would keep a lock that only closing gives back.
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }

    /// The process holding `store`'s import lock now, if any, as the kernel says
    /// (`/proc/locks`, so a holder that died is never taken for a live one), and whether
    /// it is stopped (SIGSTOP, or in a debugger). Never takes the lock itself.
    static func liveHolder(store: String) -> (holder: Holder, stopped: Bool)? {
        let path = store + ".lock"
        var info = stat()
        guard stat(path, &info) == 0, let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return nil }
        // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; waiters are marked "->".
        for line in locks.split(separator: "\n") where !line.contains("->") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, UInt64(device[2]) == UInt64(info.st_ino) else { continue }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            let recorded = descriptor >= 0 ? read(descriptor) : nil
            if descriptor >= 0 { close(descriptor) }
            let holder = recorded ?? Holder(pid: pid, host: HostName.current, startedAt: "")
            return (holder, ProcessState.isStopped(pid: Int(pid)))
        }
        return nil
    }

    private static func read(_ descriptor: Int32) -> Holder? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(Holder.self, from: Data(buffer[0..<count]))
    }
}
