#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where feed bytes come from. `read` fills as much of `buffer` as it can and returns
/// 0 only at the end of the input.
public protocol ByteSource {
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The input's total size when it is known up front (a regular file), for progress.
    var totalBytes: Int? { get }
}

/// A file, or standard input, read with read(2) through the caller's buffer.
public final class FileByteSource: ByteSource {
    public let name: String
    public let totalBytes: Int?
    private let fd: Int32
    private let ownsDescriptor: Bool

    /// Opens `path` for reading; "-" means standard input.
    /// - Throws: `IOError` when the file cannot be opened or is a directory.
    public init(path: String) throws {
        name = path
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

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw IOError(errno: errno, operation: "read", path: name)
        }
    }
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
