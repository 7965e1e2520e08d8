#if canImport(Glibc)
import Glibc
#endif

/// Writes to standard error without going through C's shared `stderr` stream.
enum Console {
    static func error(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return }
            offset += n
        }
        bytes.removeAll()
    }
}
