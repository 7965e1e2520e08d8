#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// The few file operations the splitter needs, with errors that name the file.
/// (Glibc directly, not swift-system's `FileDescriptor`: these are a dozen calls —
/// open, write, fsync, rename, flock — whose errno becomes an `IOError` naming the file
/// and the free space, and swift-system would add a dependency to wrap them once more.)
package enum FileOps {
    /// Opens a file of Ingest's own for writing. A link at `path` is never followed (the
    /// open fails with ELOOP): what a link names is not Ingest's to write.
    static func openForWriting(_ path: String, append: Bool = false) throws -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (append ? O_APPEND : O_TRUNC)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw IOError(errno: errno, operation: "create", path: path) }
        return fd
    }

    /// Creates a file that did not exist (`O_EXCL`, which also refuses a link of that name).
    static func createNew(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw IOError(errno: errno, operation: "create", path: path) }
        return fd
    }

    /// Writes `bytes` to a new file at `path`, flushed; a file (or link) already there is
    /// refused, not replaced: it is not Ingest's.
    /// - Throws: `IOError` naming the file (EEXIST when there is one).
    package static func createNew(_ bytes: [UInt8], at path: String) throws {
        try fill(try createNew(path), with: bytes, path: path)
    }

    /// Writes `bytes` to a new file named `prefix` + six random characters + `suffix`
    /// (`mkstemps`: a name no file had); returns its path.
    /// - Throws: `IOError` naming the file.
    package static func createUnique(_ bytes: [UInt8], prefix: String, suffix: String) throws -> String {
        var template = Array((prefix + "XXXXXX" + suffix).utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, Int32(suffix.utf8.count)) }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw IOError(errno: errno, operation: "create", path: prefix + "XXXXXX" + suffix) }
        try fill(fd, with: bytes, path: path)
        return path
    }

    /// Writes `bytes` to the new file `fd` opened at `path`, flushes and closes it; on a
    /// failure the file goes.
    private static func fill(_ fd: Int32, with bytes: [UInt8], path: String) throws {
        do {
            try bytes.withUnsafeBytes { try writeAll(fd, $0, path: path) }
            try sync(fd, path: path)
            try close(fd, path: path)
        } catch {
            _ = Glibc.close(fd)
            _ = unlink(path)
            throw error
        }
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
    ///
    /// Only a regular file (or nothing) at `path` is replaced. A device, FIFO or socket, or
    /// a link to one, is written through as `>` would (renaming over `/dev/null` would
    /// replace the node itself); a directory, or a link to anything else, is refused: the
    /// file a link names is not Ingest's to replace. The temporary file has a name no
    /// other file has (created with `O_EXCL`), so nothing that was there is overwritten.
    /// - Throws: `IOError` naming the file (and the free space, when the disk is full).
    package static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        try writeAtomically(to: path) { sink in try bytes.withUnsafeBytes(sink) }
    }

    /// `writeAtomically(_:to:)` for bytes made as they are written: `produce` hands them to
    /// the sink it is given, in blocks.
    package static func writeAtomically(to path: String,
                                        _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        switch try OutputPath(path) {
        case .passThrough:
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw IOError(errno: errno, operation: "open", path: path) }
            defer { _ = Glibc.close(fd) }
            try produce { try writeAll(fd, $0, path: path) }
        case .replaceable:
            let (fd, temporary) = try createTemporary(beside: path)
            var open = true
            do {
                try produce { try writeAll(fd, $0, path: path) }
                try sync(fd, path: path)
                open = false
                try close(fd, path: path)
                try rename(temporary, to: path)
            } catch {
                if open { _ = Glibc.close(fd) }
                _ = unlink(temporary)
                throw error
            }
        }
    }

    /// Checks, before a long run, that `writeAtomically` will be able to write `path`.
    /// - Throws: `IOError` as `writeAtomically` would for what stands at `path`.
    package static func checkWritable(_ path: String) throws { _ = try OutputPath(path) }

    /// A new, empty file beside `path` (`.NAME.PID-N.tmp`), and its descriptor.
    private static func createTemporary(beside path: String) throws -> (Int32, String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        while true {
            let temporary = directory + "." + name + ".\(getpid())-\(temporaryCounter.add(1, ordering: .relaxed).newValue).tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd >= 0 { return (fd, temporary) }
            guard errno == EEXIST else { throw IOError(errno: errno, operation: "create", path: temporary) }
        }
    }

    private static let temporaryCounter = Atomic<Int>(0)

    /// Whether `entry` (a name in a directory) is a temporary file that `writeAtomically`
    /// made for `name` in that directory (`.NAME.PID-N.tmp`) in a process that is gone: a
    /// SIGKILL between its creation and its rename leaves it.
    package static func isLeftoverTemporary(_ entry: String, of name: String) -> Bool {
        let prefix = "." + name + "."
        guard entry.hasPrefix(prefix), entry.hasSuffix(".tmp") else { return false }
        let middle = entry.dropFirst(prefix.count).dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        guard middle.count == 2, let pid = pid_t(middle[0]), pid > 0, Int(middle[1]) != nil else { return false }
        return kill(pid, 0) == -1 && errno == ESRCH
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

    /// The whole file, in one array sized from the file's size.
    /// - Throws: `IOError` naming the file.
    package static func readFile(_ path: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try readFile(path, into: &bytes)
        return bytes
    }

    /// The whole file, read into `bytes` in place of what it held, in the memory `bytes`
    /// already has when nothing else holds that array.
    ///
    /// For files read one after another (a worker's chunks, megabytes each): a fresh array
    /// of that size is fresh memory from the kernel, a page fault and a zeroed page per
    /// 4 KiB (44,000 of them for 300,000 records' chunks); memory read into before costs a
    /// `memset`.
    /// - Throws: `IOError` naming the file; `bytes` is then empty.
    package static func readFile(_ path: String, into bytes: inout [UInt8]) throws {
        // Kept capacity: when another holder shares the array, a new one is made, not a copy.
        bytes.removeAll(keepingCapacity: true)
        let source = try FileByteSource(path: path)
        var size = max(fileSize(path) ?? 0, 1 << 12) + 1
        var filled = 0
        do {
            while true {
                bytes.append(contentsOf: repeatElement(0, count: size - bytes.count))
                try bytes.withUnsafeMutableBytes { buffer in
                    while filled < buffer.count {
                        let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                        if n == 0 { break }
                        filled += n
                    }
                }
                // One byte more than the file's size was asked for: a short read means its end.
                if filled < size { break }
                size *= 2
            }
        } catch {
            bytes.removeAll(keepingCapacity: true)
            throw error
        }
        bytes.removeLast(size - filled)
    }

    static func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT { throw IOError(errno: errno, operation: "remove", path: path) }
    }

    /// Removes `path` when it is a regular file (a file of Ingest's own name that Ingest
    /// made); a link, directory or anything else of that name is left as it is.
    package static func removeRegularFile(_ path: String) throws {
        guard isRegularFile(path) else { return }
        try remove(path)
    }

    /// Removes each of `names` that is a regular file in the directory open at `directory`
    /// (its path, `path`, for messages), looked at and removed through the descriptor so
    /// that no link is followed; a name already gone is no failure (another process may be
    /// removing the same files), and a link or anything else of such a name is left.
    /// - Throws: `IOError` when a file cannot be looked at or removed.
    package static func removeRegularFiles(_ names: [String], inDirectory directory: Int32, path: String) throws {
        for name in names {
            var info = stat()
            guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno == ENOENT { continue }
                throw IOError(errno: errno, operation: "remove", path: path + "/" + name)
            }
            guard info.st_mode & S_IFMT == S_IFREG else { continue }
            if unlinkat(directory, name, 0) != 0 && errno != ENOENT {
                throw IOError(errno: errno, operation: "remove", path: path + "/" + name)
            }
        }
    }

    /// Whether `path` itself (not what a link there names) is a regular file.
    package static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Whether `path` itself (not what a link there names) is a directory.
    package static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Creates `path` and its parents as needed; refuses a path that is a file.
    package static func makeDirectory(_ path: String) throws {
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

/// What stands at a path Ingest is asked to write whole, and so how it may be written.
enum OutputPath {
    /// Nothing, or a regular file: written beside it and renamed over it.
    case replaceable
    /// A device, FIFO or socket, or a link to one: written through, never replaced.
    case passThrough

    /// - Throws: `IOError` for a directory, or a link to anything but a device, FIFO or socket.
    init(_ path: String) throws {
        var link = stat()
        guard lstat(path, &link) == 0 else {
            guard errno == ENOENT else { throw IOError(errno: errno, operation: "write", path: path) }
            self = .replaceable
            return
        }
        var info = link
        let isLink = link.st_mode & S_IFMT == S_IFLNK
        if isLink && stat(path, &info) != 0 {
            throw IOError(operation: "write", path: path, reason: "it is a symbolic link to no file; Ingest does not write through links")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG where !isLink: self = .replaceable
        case S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK: self = .passThrough
        case S_IFDIR: throw IOError(errno: EISDIR, operation: "write", path: path)
        default:
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "another file"
            throw IOError(operation: "write", path: path,
                          reason: "it is a symbolic link to \(target); Ingest does not write through links (name the file itself)")
        }
    }
}
