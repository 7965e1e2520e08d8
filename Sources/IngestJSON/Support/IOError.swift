#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call on a file failed. Says which call, on which file, and why in the
/// system's words; for a full disk it also says how much space is left.
public struct IOError: Error, Sendable, Equatable, CustomStringConvertible {
    public var errno: Int32
    public var operation: String
    public var path: String
    /// Ingest's own words for why, where the system's would mislead (a link refused, say).
    public var reason: String?

    public init(errno: Int32, operation: String, path: String) {
        self.errno = errno
        self.operation = operation
        self.path = path
        reason = nil
    }

    /// A refusal of Ingest's own, in `reason`'s words (errno EPERM).
    public init(operation: String, path: String, reason: String) {
        self.init(errno: EPERM, operation: operation, path: path)
        self.reason = reason
    }

    public var isDiskFull: Bool { errno == ENOSPC || errno == EFBIG || errno == EDQUOT }

    public var description: String {
        var text = "cannot \(operation) \(path): \(reason ?? String(cString: strerror(errno)))"
        if isDiskFull, let free = Self.freeBytes(near: path) {
            text += " (\(ByteCount.format(free)) free on that file system)"
        }
        return text
    }

    static func freeBytes(near path: String) -> Int? {
        var info = statvfs()
        var directory = path
        while true {
            if statvfs(directory, &info) == 0 { return Int(info.f_bavail) * Int(info.f_frsize) }
            guard let slash = directory.lastIndex(of: "/"), slash != directory.startIndex else {
                return statvfs(".", &info) == 0 ? Int(info.f_bavail) * Int(info.f_frsize) : nil
            }
            directory = String(directory[..<slash])
        }
    }
}

/// Human-readable byte counts: 1023 B, 1.5 KiB, 370.2 MiB.
package enum ByteCount {
    package static func format(_ bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        guard unit > 0 else { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
