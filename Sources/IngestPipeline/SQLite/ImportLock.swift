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
    private let file: LockFile

    /// Takes the lock for `store`.
    /// - Throws: `ImportError` naming the live holder; `IOError` when the lock file
    ///   cannot be opened (a link of its name among the reasons) or written.
    init(store: String) throws {
        path = store + ".lock"
        file = try LockFile(path: path)
        let recorded = Self.holder(file.contents)
        guard try file.tryLock() else {
            let who = recorded.map { "pid \($0.pid) on \($0.host), started \($0.startedAt)" } ?? "a process that has not written its name yet"
            throw ImportError(.storeBusy(store: store, holder: who))
        }
        // Read again under the lock: what is there now was left by a holder that is gone.
        previous = Self.holder(file.contents)
        let holder = Holder(pid: getpid(), host: HostName.current, startedAt: Date.now.ISO8601Format())
        try file.replaceContents(Array(try JSONEncoder().encode(holder)))
    }

    /// Lets the lock go; the file stays, empty.
    func release() { file.release(clear: true) }

    deinit { release() }

    /// The process holding `store`'s import lock now, if any, as the kernel says
    /// (`/proc/locks`, so a holder that died is never taken for a live one), and whether
    /// it is stopped (SIGSTOP, or in a debugger). Never takes the lock itself.
    @_optimize(none)
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
            let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            let recorded = descriptor >= 0 ? holder(LockFile.read(descriptor)) : nil
            if descriptor >= 0 { close(descriptor) }
            let holder = recorded ?? Holder(pid: pid, host: HostName.current, startedAt: "")
            return (holder, ProcessState.isStopped(pid: Int(pid)))
        }
        return nil
    }

    private static func holder(_ bytes: [UInt8]) -> Holder? {
        bytes.isEmpty ? nil : try? JSONDecoder().decode(Holder.self, from: Data(bytes))
    }
}
