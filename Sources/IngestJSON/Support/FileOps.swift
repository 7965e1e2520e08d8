#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The few file operations the splitter needs, with errors that name the file.
/// (Glibc directly, not swift-system's `FileDescriptor`: these are a dozen calls —
/// open, write, fsync, rename, flock — whose errno becomes an `IOError` naming the file
/// and the free space, and swift-system would add a dependency to wrap them once more.)
package enum FileOps {
    static func openForWriting(_ path: String, append: Bool = false) throws -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw IOError(errno: errno, operation: "create", path: path) }
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        if let injected = WriteFaults.injected(for: path) { throw IOError(errno: injected, operation: "write", path: path) }
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw IOError(errno: errno, operation: "write", path: path)
            }
            offset += n
        }
    }

    static func sync(_ fd: Int32, path: String) throws {
        guard fsync(fd) == 0 else { throw IOError(errno: errno, operation: "flush", path: path) }
    }

    static func close(_ fd: Int32, path: String) throws {
        guard Glibc.close(fd) == 0 else { throw IOError(errno: errno, operation: "close", path: path) }
    }

    static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw IOError(errno: errno, operation: "rename", path: from) }
    }

    /// Writes a whole file under a temporary name, flushes it and renames it into
    /// place: readers see the old file or the new one, never a part.
    /// - Throws: `IOError` naming the file (and the free space, when the disk is full).
    package static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let temporary = path + ".tmp"
        let fd = try openForWriting(temporary)
        do {
            try bytes.withUnsafeBytes { try writeAll(fd, $0, path: temporary) }
            try sync(fd, path: temporary)
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        try close(fd, path: temporary)
        try rename(temporary, to: path)
    }

    /// Makes renames inside `directory` durable.
    static func syncDirectory(_ directory: String) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw IOError(errno: errno, operation: "open", path: directory) }
        defer { _ = Glibc.close(fd) }
        try sync(fd, path: directory)
    }

    /// Whether the feed at `path` can be read only once: standard input (`-`), a pipe, a
    /// FIFO, a socket, a terminal. Such a feed is read to its end as it comes, and nothing
    /// about it is checked by opening it again (a second open would see other bytes, or
    /// steal them from the first).
    package static func isReadOnce(_ path: String) -> Bool {
        if path == "-" { return true }
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let kind = info.st_mode & S_IFMT
        return kind != S_IFREG && kind != S_IFDIR
    }

    /// The size of the file at `path`, or nil when there is none.
    package static func fileSize(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// The whole file, read straight into one array sized from the file's size.
    /// - Throws: `IOError` naming the file.
    package static func readFile(_ path: String) throws -> [UInt8] {
        let source = try FileByteSource(path: path)
        var capacity = max(fileSize(path) ?? 0, 1 << 12) + 1
        var out: [UInt8] = []
        // Read in place, not zeroed first: a chunk is megabytes, read once per import.
        while true {
            let chunk = try [UInt8](unsafeUninitializedCapacity: capacity - out.count) { buffer, count in
                count = 0
                while count < buffer.count {
                    let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[count...]))
                    if n == 0 { break }
                    count += n
                }
            }
            if out.isEmpty { out = chunk } else { out += chunk }
            guard out.count == capacity else { return out }
            capacity *= 2
        }
    }

    static func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT { throw IOError(errno: errno, operation: "remove", path: path) }
    }

    /// Creates `path` and its parents as needed; refuses a path that is a file.
    static func makeDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw IOError(errno: ENOTDIR, operation: "use as a directory", path: path) }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw IOError(errno: errno == 0 ? EACCES : errno, operation: "create directory", path: path)
        }
    }

    static func contents(of directory: String) throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw IOError(errno: EACCES, operation: "list", path: directory)
        }
    }
}
