#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where feed bytes come from. `read` fills as much of `buffer` as it can and returns
/// 0 only at the end of the input.
package protocol ByteSource {
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The input's total size when it is known up front (a regular file), for progress.
    var totalBytes: Int? { get }
}

/// A file, or standard input, read with read(2) through the caller's buffer.
package final class FileByteSource: ByteSource {
    package let name: String
    package let totalBytes: Int?
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// Asked while a read of a pipe or terminal waits for input: true ends the wait with
    /// `ReadCancelled` (a stop signal must not wait for input that may never come).
    private let isCancelled: (@Sendable () -> Bool)?

    /// Opens `path` for reading; "-" means standard input. While a read of anything but
    /// a regular file waits for input, `isCancelled` is asked ten times a second.
    /// - Throws: `IOError` when the file cannot be opened or is a directory.
    package init(path: String, isCancelled: (@Sendable () -> Bool)? = nil) throws {
        name = path
        self.isCancelled = isCancelled
        if path == "-" {
            fd = STDIN_FILENO
            ownsDescriptor = false
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw IOError(errno: errno, operation: "open", path: path) }
            ownsDescriptor = true
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            totalBytes = Int(info.st_size)
        } else if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            if ownsDescriptor { close(fd) }
            throw IOError(errno: EISDIR, operation: "read", path: path)
        } else {
            totalBytes = nil
        }
    }

    deinit {
        if ownsDescriptor { close(fd) }
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let isCancelled {
            // Asked before every read, not only while waiting: endless input (whitespace
            // forever) never waits and never ends a record either.
            if isCancelled() { throw ReadCancelled(path: name) }
            if totalBytes == nil { try wait(for: isCancelled) }
        }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw IOError(errno: errno, operation: "read", path: name)
        }
    }
}

extension FileByteSource {
    /// Waits until the input has bytes (or its end), asking `isCancelled` between waits.
    private func wait(for isCancelled: @Sendable () -> Bool) throws {
        var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            if isCancelled() { throw ReadCancelled(path: name) }
            let ready = poll(&request, 1, 100)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { return }  // read(2) reports the error
        }
    }
}

/// A read of a pipe or terminal stopped while it waited for input, because the reader
/// was asked to stop.
public struct ReadCancelled: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var description: String { "\(path): stopped while waiting for input" }
}

/// Bytes already in memory, handed out at most `readSize` at a time, so tests can
/// cut the input at every possible place.
package struct MemoryByteSource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    private let readSize: Int
    package var totalBytes: Int? { bytes.count }

    package init(_ bytes: [UInt8], readSize: Int = .max) {
        self.bytes = bytes
        self.readSize = max(1, readSize)
    }

    package init(_ text: String, readSize: Int = .max) {
        self.init(Array(text.utf8), readSize: readSize)
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = min(buffer.count, readSize, bytes.count - offset)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: n)
        }
        offset += n
        return n
    }
}
