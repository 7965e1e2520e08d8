import Foundation
import Synchronization

/// A throwaway PostgreSQL server for a test: a copy of a cluster `initdb` made once per
/// process, in a temporary directory, and `pg_ctl start` on a unix socket there (no TCP
/// port), stopped and removed on deinit.
/// PostgreSQL refuses to run as root, so under root (CI) it runs as the `postgres`
/// user Debian's package creates, through `runuser`.
public final class PostgresServer: @unchecked Sendable {
    /// The server binaries, or nil (then `unavailableReason` says why).
    public static let binaries: String? = {
        let roots = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in roots.sorted(by: >) {
            let bin = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb"),
               FileManager.default.isExecutableFile(atPath: bin + "/pg_ctl") { return bin }
        }
        return nil
    }()

    /// Why the tests that need a server are skipped here, or nil when they can run.
    public static let unavailableReason: String? = {
        guard binaries != nil else {
            return "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql: install the postgresql package"
        }
        if getuid() == 0, getpwnam("postgres") == nil {
            return "running as root and there is no postgres user to run the server as"
        }
        return nil
    }()

    public static var isAvailable: Bool { unavailableReason == nil }

    public let directory: String
    public let port: Int
    /// A libpq URL for database `ingest` as the server's superuser.
    public let url: String
    /// The server's log (errors, deadlocks among them).
    public var logFile: String { directory + "/server.log" }

    /// Starts a server with an empty database `ingest`.
    /// - Throws: when `initdb`, `pg_ctl` or `createdb` fails (their output is in the error).
    public init() throws {
        guard let bin = Self.binaries, Self.unavailableReason == nil else {
            throw ServerError(message: Self.unavailableReason ?? "no server")
        }
        directory = "/tmp/ingest-pg-\(UUID().uuidString.prefix(8))"
        port = Int.random(in: 20_000..<60_000)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0, let user = getpwnam("postgres") {
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        let user = Self.user
        url = "postgresql://\(user)@/ingest?host=\(directory)&port=\(port)"
        // A copy of a cluster made once per test process, its database `ingest` in it: initdb
        // for every server took about a second of CPU each (0.6 s user, 0.35 s system here).
        let template = try Self.template.get()
        try Self.run("/bin/cp", ["-a", template + "/data", directory + "/data"])
        try Self.run(bin + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-o",
                                       "-k \(directory) -p \(port) -c listen_addresses= -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                                       "start"])
    }

    /// The user the servers run as and their superuser: `postgres` under root, else this one.
    static var user: String { getuid() == 0 ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? "postgres") }

    /// A directory whose `data` is an initialised cluster with an empty database `ingest`,
    /// stopped cleanly; removed when the process exits.
    private static let template: Result<String, ServerError> = {
        guard let bin = binaries else { return .failure(ServerError(message: unavailableReason ?? "no server")) }
        let directory = "/tmp/ingest-pg-template-\(getpid())-\(UUID().uuidString.prefix(8))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if getuid() == 0, let user = getpwnam("postgres") {
                chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
            }
            atexit { if let path = try? PostgresServer.template.get() { try? FileManager.default.removeItem(atPath: path) } }
            try run(bin + "/initdb", ["-D", directory + "/data", "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
            let port = Int.random(in: 20_000..<60_000)
            try run(bin + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/template.log", "-w", "-o",
                                      "-k \(directory) -p \(port) -c listen_addresses= -c fsync=off", "start"])
            defer { _ = try? run(bin + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"]) }
            try run(bin + "/createdb", ["-h", directory, "-p", String(port), "-U", user, "ingest"])
            return .success(directory)
        } catch let error as ServerError {
            return .failure(error)
        } catch {
            return .failure(ServerError(message: "cannot make the template cluster in \(directory): \(error)"))
        }
    }()

    deinit { stop() }

    /// Stops the server when the process exits (for a server kept in a static, whose
    /// deinit never runs).
    public func stopAtExit() {
        Self.stoppedAtExit.withLock { $0.append(self) }
        atexit { PostgresServer.stoppedAtExit.withLock { servers in for server in servers { server.stop() } } }
    }

    private static let stoppedAtExit = Mutex<[PostgresServer]>([])

    /// Restarts the server as an operator would (`pg_ctl restart -m fast`): every session
    /// is ended, then it comes back on the same socket.
    public func restart() throws {
        try Self.run(Self.binaries! + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "restart"])
    }

    /// Stops the server and removes its directory.
    public func stop() {
        if let bin = Self.binaries {
            _ = try? Self.run(bin + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Makes another empty database and returns its URL.
    public func createDatabase(_ name: String) throws -> String {
        let user = Self.user
        try Self.run(Self.binaries! + "/createdb", ["-h", directory, "-p", String(port), "-U", user, name])
        return "postgresql://\(user)@/\(name)?host=\(directory)&port=\(port)"
    }

    /// Runs `psql` on the `ingest` database with `arguments`, returning its output.
    public func psql(_ arguments: [String]) throws -> String {
        let user = Self.user
        return try Self.run(Self.binaries! + "/psql", ["-X", "-q", "-h", directory, "-p", String(port), "-U", user, "-d", "ingest"] + arguments)
    }

    public struct ServerError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Runs `tool` (as the postgres user under root) with its output in a file, by
    /// posix_spawn and waitpid: Foundation's `Process` can miss the exit of a child whose
    /// own child (the server pg_ctl starts) lives on.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        let log = "/tmp/ingest-pg-tool-\(UUID().uuidString).log"
        defer { unlink(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw ServerError(message: "cannot start \(argv[0]): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw ServerError(message: "\((tool as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }
}
