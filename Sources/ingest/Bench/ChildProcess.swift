#if canImport(Glibc)
import IngestJSON
import Glibc
#endif

/// Runs a program and measures it from outside: wall time and peak resident memory
/// (wait4's ru_maxrss) and CPU time, so a benchmark's figures are the child's alone.
struct ChildProcess {
    struct Result {
        var status: Int32
        var seconds: Double
        var peakRSSBytes: Int
        /// User plus system CPU time of the child (all its threads).
        var cpuSeconds: Double = 0
    }

    /// Runs `path` with `arguments`, stdin from `standardInput` (or /dev/null) and
    /// stdout to /dev/null.
    /// - Throws: `CommandFailure` when the program cannot be started.
    static func run(_ path: String, _ arguments: [String], standardInput: String? = nil) throws -> Result {
        try start(path, arguments, standardInput: standardInput).wait()
    }

    /// A started program; `wait` measures it to its end.
    struct Started {
        let pid: pid_t
        let started: ContinuousClock.Instant

        func wait() -> Result {
            var status: Int32 = 0
            var usage = rusage()
            while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
            let seconds = (ContinuousClock.now - started).seconds
            let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            return Result(status: exitStatus, seconds: seconds, peakRSSBytes: Int(usage.ru_maxrss) * 1024, cpuSeconds: cpu)
        }
    }

    /// Starts `path` as `run` does, without waiting for it.
    /// - Throws: `CommandFailure` when the program cannot be started.
    static func start(_ path: String, _ arguments: [String], standardInput: String? = nil) throws -> Started {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, standardInput ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        SpawnActions.closeInheritedDescriptors(&actions)

        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let started = ContinuousClock.now
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw CommandFailure("cannot run \(path): \(String(cString: strerror(spawned)))")
        }
        return Started(pid: pid, started: started)
    }

    /// The full path of a program on PATH, or nil.
    static func find(_ program: String) -> String? {
        guard let path = getenv("PATH").map({ String(cString: $0) }) else { return nil }
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// This executable's own path.
    static var currentExecutable: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }
}
