import ArgumentParser
import IngestJSON
import IngestPipeline
import IngestStore
#if canImport(Glibc)
import Glibc
#endif

/// The `ingest` command line. Exit codes: 0 success, 1 bad input or a failed
/// operation (one readable message on stderr), 2 usage error.
@main
struct Ingest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Stream huge JSON feeds into numbered chunks and an object graph on SQLite or PostgreSQL.",
        discussion: "With no subcommand, `./run.sh` runs `ingest demo`.",
        version: Ingest.version,
        subcommands: [Demo.self, Generate.self, Split.self, Infer.self, Import.self, Join.self, Resume.self, Replay.self, Status.self, Query.self, History.self, Codegen.self, Bench.self]
    )

    /// This build's version (CHANGELOG.md lists what each holds).
    static let version = "0.5.0-dev"

    static func main() {
        // One malloc arena: the import's threads allocate little per record, and glibc's
        // default of one arena per thread kept freed buffers in each (peak RSS of a 1M-record
        // import 58 MB with one arena against 59–66 MB with the default, at the same speed).
        // Blocks of 1 MiB and more (chunk bytes, requests' arrays) are mapped and unmapped
        // on their own: glibc's default threshold rises to 32 MiB as such blocks are freed,
        // after which they stay in the heap between chunks (peak RSS of a 1M-record import
        // 80 → 72 MB on PostgreSQL, 71 → 66 MB on SQLite with 2 workers, at the same speed).
        // (mallopt is not in Swift's Glibc module; M_ARENA_MAX is -8 and M_MMAP_THRESHOLD -3 in malloc.h.)
        if let mallopt = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            let set = unsafeBitCast(mallopt, to: (@convention(c) (Int32, Int32) -> Int32).self)
            _ = set(-8, 1)
            _ = set(-3, 1 << 20)
        }
        // Before anything opens SQLite: no mutex on each of its allocations (the command
        // owns its process; the library leaves the setting to its host).
        PersistentStoreCoordinator.disableSQLiteMemoryStatistics()
        // The argument parser's own errors (usage, --help, --version) are told by where they
        // come from, as their types are not public: parsing, or the run of a command that is
        // not one of ingest's (the parser's help command, whose run throws them).
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            Glibc.exit(Self.reportAsParser(error))
        }
        do {
            try command.run()
        } catch {
            guard isOwn(type(of: command)) else { Glibc.exit(Self.reportAsParser(error)) }
            Glibc.exit(Self.report(error, store: (command as? any StoreCommand)?.store, command: type(of: command)))
        }
    }

    /// Whether `command` is `Ingest` or one of its subcommands, at any depth.
    static func isOwn(_ command: any ParsableCommand.Type) -> Bool {
        func holds(_ type: any ParsableCommand.Type) -> Bool {
            ObjectIdentifier(type) == ObjectIdentifier(command) || type.configuration.subcommands.contains(where: holds)
        }
        return holds(Ingest.self)
    }

    /// Prints one readable message for `error`, which a command's run threw, and returns
    /// the process exit code: the argument parser's errors (`ValidationError`, `CleanExit`,
    /// `ExitCode`) as it prints them, every other error as one `ingest: …` line with exit
    /// status 1, with advice for `command`.
    static func report(_ error: any Error, store: String? = nil, command: any ParsableCommand.Type = Ingest.self) -> Int32 {
        switch error {
        case is ValidationError, is CleanExit, is ExitCode:
            return reportAsParser(error)
        case let error as StoreError:
            // SQLite's own messages do not say which file: the command's store does.
            if case .database = error, let store {
                Console.error("ingest: \(store): \(Advice.message(error, for: command))\n")
            } else {
                Console.error("ingest: \(Advice.message(error, for: command))\n")
            }
            return 1
        default:
            Console.error("ingest: \(Advice.message(error, for: command))\n")
            return 1
        }
    }

    /// Prints an error of the argument parser's as it does and returns the exit code: 0
    /// after --help or --version, 2 for a usage error.
    static func reportAsParser(_ error: any Error) -> Int32 {
        let code = exitCode(for: error)
        let message = fullMessage(for: error)
        if code == .success {
            if !message.isEmpty { print(message) }
            return 0
        }
        if !message.isEmpty { Console.error(message + "\n") }
        return code == .validationFailure ? 2 : code.rawValue
    }
}

/// A command that works on one store, named in messages that do not name it themselves.
protocol StoreCommand {
    var store: String { get }
}

extension Ingest.Import: StoreCommand {}
extension Ingest.Resume: StoreCommand {}
extension Ingest.Status: StoreCommand {}
extension Ingest.Query: StoreCommand {}
extension Ingest.Join: StoreCommand {}
extension Ingest.History: StoreCommand {}

/// A command could not do its work for a reason it explains itself.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
