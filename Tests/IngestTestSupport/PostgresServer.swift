import Foundation
import IngestJSON
import Synchronization

/// A throwaway PostgreSQL server for a test: a copy of a cluster `initdb` made once per
/// process, in a temporary directory, and `pg_ctl start` on a unix socket there (no TCP
/// port), stopped and removed on deinit.
/// PostgreSQL refuses to run as root, so under root (CI) it runs as the `postgres`
/// user Debian's package creates, through `runuser`.
///
/// `PostgresServer.database()` is the cheaper kind most tests take: a database of their own
/// on one server the whole test process shares, dropped on deinit. A server of its own
/// (`PostgresServer()`) costs about 1.5 s (copying a cluster of about 1,000 files, starting
/// and stopping it) against 0.1 s; a test takes one only when it restarts the server, reads
/// its log, or looks at what is cluster-wide (roles, `pg_database`, `pg_stat_activity`).
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
    /// A libpq URL for this server's database (`ingest` on a server of its own) as the
    /// server's superuser.
    public let url: String
    /// The server's log (errors, deadlocks among them); a shared server's holds every test's.
    public var logFile: String { directory + "/server.log" }
    /// The database `url` names.
    public let databaseName: String
    /// Set for a database on the shared server: its databases are dropped, the server left running.
    private let shared: Bool
    /// The databases `createDatabase` made here on the shared server, by the name the test
    /// gave and the name they have there; dropped with this one.
    private let created = Mutex<[(given: String, name: String)]>([])

    /// Starts a server of its own with an empty database `ingest`.
    /// - Throws: when `initdb`, `pg_ctl` or `createdb` fails (their output is in the error).
    public convenience init() throws {
        try self.init(maxConnections: 300)
    }

    private init(maxConnections: Int) throws {
        guard let bin = Self.binaries, Self.unavailableReason == nil else {
            throw ServerError(message: Self.unavailableReason ?? "no server")
        }
        directory = "\(Self.root)/ingest-pg-\(UUID().uuidString.prefix(8))"
        port = Int.random(in: 20_000..<60_000)
        databaseName = "ingest"
        shared = false
        // Made here, never taken over (a link or directory someone left at that name fails).
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
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
                                       "-k \(directory) -p \(port) -c listen_addresses= -c max_connections=\(maxConnections) -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                                       "start"])
    }

    /// A database `name` on `server`, made already.
    private init(database name: String, on server: PostgresServer) {
        directory = server.directory
        port = server.port
        databaseName = name
        shared = true
        url = "postgresql://\(Self.user)@/\(name)?host=\(directory)&port=\(port)"
    }

    /// A new, empty database of this test's own on the server the test process shares
    /// (started at the first call, stopped when the process exits), dropped on deinit.
    /// `INGEST_TEST_OWN_SERVERS=1` gives each a server of its own instead (as before the
    /// shared one: to tell whether a failure comes from sharing, and to compare the suite's time).
    /// - Throws: when the shared server cannot start or `createdb` fails.
    public static func database() throws -> PostgresServer {
        if ProcessInfo.processInfo.environment["INGEST_TEST_OWN_SERVERS"] == "1" { return try PostgresServer() }
        let server = try shared.get()
        let name = "test\(sharedDatabases.withLock { $0 += 1; return $0 })"
        try server.makeDatabase(name)
        return PostgresServer(database: name, on: server)
    }

    /// The server `database()` hands out databases on. Tests run side by side on it, and a
    /// multi-process import opens dozens of connections: it allows 1,000 (a server of a
    /// test's own, 300).
    private static let shared: Result<PostgresServer, ServerError> = {
        do {
            let server = try PostgresServer(maxConnections: 1000)
            server.stopAtExit()
            return .success(server)
        } catch let error as ServerError {
            return .failure(error)
        } catch {
            return .failure(ServerError(message: "\(error)"))
        }
    }()

    private static let sharedDatabases = Mutex(0)

    /// Makes database `name` by copying template1's files (`FILE_COPY`: a tenth of a
    /// server's start, and faster than the WAL-logged default).
    private func makeDatabase(_ name: String) throws {
        // createdb has --strategy from PostgreSQL 15 on; before, FILE_COPY is how it makes every database.
        let strategy = Self.majorVersion >= 15 ? ["--strategy=file_copy"] : []
        try Self.run(Self.binaries! + "/createdb", ["-h", directory, "-p", String(port), "-U", Self.user] + strategy + [name])
    }

    /// The server binaries' major version, read from their directory (`/usr/lib/postgresql/15/bin`).
    static let majorVersion: Int = binaries.flatMap { Int(URL(fileURLWithPath: $0).deletingLastPathComponent().lastPathComponent) } ?? 0

    /// Where clusters go: `INGEST_TEST_PG_ROOT` when set, else `/dev/shm` when it is a tmpfs
    /// with 4 GiB free, else `/tmp`. The servers' CPU in the quick suite was a third of
    /// the suite's, most of it the kernel making and removing files on /tmp's ext4 (inode
    /// allocation, for each cluster's ~1,000 files and each database's ~300); on a tmpfs
    /// that costs little (Performance, "The tests' build and the suite's tail").
    public static let root: String = {
        if let given = ProcessInfo.processInfo.environment["INGEST_TEST_PG_ROOT"], !given.isEmpty { return given }
        return ScratchRoot.sharedMemory ?? "/tmp"
    }()

    /// The user the servers run as and their superuser: `postgres` under root, else this one.
    static var user: String { getuid() == 0 ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? "postgres") }

    /// A directory whose `data` is an initialised cluster with an empty database `ingest`,
    /// stopped cleanly; removed when the process exits.
    private static let template: Result<String, ServerError> = {
        guard let bin = binaries else { return .failure(ServerError(message: unavailableReason ?? "no server")) }
        let directory = "\(root)/ingest-pg-template-\(getpid())-\(UUID().uuidString.prefix(8))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
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
    /// - Throws: on a shared server's database, which cannot be restarted under other tests.
    public func restart() throws {
        guard !shared else { throw ServerError(message: "restart() needs a server of its own: PostgresServer(), not database()") }
        try Self.run(Self.binaries! + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "restart"])
    }

    /// Stops the server and removes its directory; on the shared server, drops this test's
    /// databases (ending their sessions) instead.
    public func stop() {
        if shared {
            let names = [databaseName] + created.withLock { made in defer { made.removeAll() }; return made.map(\.name) }
            for name in names {
                // --force (PostgreSQL 13 on) ends the sessions a killed test's importers left.
                let force = Self.majorVersion >= 13 ? ["--force"] : []
                _ = try? Self.run(Self.binaries! + "/dropdb", ["-h", directory, "-p", String(port), "-U", Self.user,
                                                                "--if-exists"] + force + [name])
            }
            return
        }
        if let bin = Self.binaries {
            _ = try? Self.run(bin + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Makes another empty database and returns its URL. On the shared server its name is
    /// this database's name, `_`, then `name`, so that tests side by side do not collide.
    public func createDatabase(_ name: String) throws -> String {
        let user = Self.user
        let given = name
        let name = shared ? "\(databaseName)_\(name)" : name
        try makeDatabase(name)
        if shared { created.withLock { $0.append((given, name)) } }
        return "postgresql://\(user)@/\(name)?host=\(directory)&port=\(port)"
    }

    /// Runs `psql` on this server's database (`url`'s) with `arguments`, returning its output.
    /// A `-d` among them names a database `createDatabase` made, by the name it was given.
    public func psql(_ arguments: [String]) throws -> String {
        let user = Self.user
        let made = created.withLock { $0 }
        var arguments = arguments
        for index in arguments.indices.dropLast() where arguments[index] == "-d" {
            if let database = made.first(where: { $0.given == arguments[index + 1] }) { arguments[index + 1] = database.name }
        }
        return try Self.run(Self.binaries! + "/psql", ["-X", "-q", "-h", directory, "-p", String(port), "-U", user, "-d", databaseName] + arguments)
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
        // The server pg_ctl starts lives as long as the test process: it must hold no
        // pipe or FIFO another test has open at this moment.
        SpawnActions.closeInheritedDescriptors(&actions)
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
