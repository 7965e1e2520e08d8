public import Foundation

/// A fresh directory per test under `ScratchRoot`, removed when the test ends.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init() throws {
        // The process's id in the name: `run.sh test`'s time limit removes a killed test process's directories.
        path = ScratchRoot.path + "/ingest-tests-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` in the directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let target = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: target))
        return target
    }
}

/// The `ingest` binary the test run built, run as a user would.
public enum IngestBinary {
    public struct Outcome: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// A started run; `finish` waits for it.
    public struct Running {
        public let process: Process
        let out: Pipe
        let err: Pipe
    }

    /// On Linux the test runner sits beside the package's executables.
    public static var path: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("ingest").path
    }

    /// Starts `ingest arguments…` with `stdin` as its standard input (or none), in
    /// `directory` (default: the test's own).
    public static func start(_ arguments: [String], stdin: [UInt8]? = nil, in directory: String? = nil) throws -> Running {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        if let stdin {
            let input = Pipe()
            process.standardInput = input
            try process.run()
            input.fileHandleForWriting.write(Data(stdin))
            try input.fileHandleForWriting.close()
        } else {
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }
        return Running(process: process, out: out, err: err)
    }

    public static func finish(_ running: Running) -> Outcome {
        let stdout = running.out.fileHandleForReading.readDataToEndOfFile()
        let stderr = running.err.fileHandleForReading.readDataToEndOfFile()
        running.process.waitUntilExit()
        return Outcome(status: running.process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                       stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Runs `ingest arguments…` to its end.
    public static func run(_ arguments: [String], stdin: [UInt8]? = nil, in directory: String? = nil) throws -> Outcome {
        finish(try start(arguments, stdin: stdin, in: directory))
    }
}
