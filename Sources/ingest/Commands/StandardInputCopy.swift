import Foundation
import IngestJSON
#if canImport(Glibc)
import Glibc
#endif

/// Standard input read to its end into a file of Ingest's own, so that a pipeline can be
/// inferred from its records and then the same records imported: standard input can be
/// read only once, and inference reads the feed before the import does.
///
/// The file is unlinked the moment it is made and read through its descriptor, so it
/// goes however the process ends (a signal or a kill during the copy included), and no
/// other process can open it by name.
final class StandardInputCopy {
    /// Where the copy can be read from its start, as a path (the descriptor's entry in /proc).
    let path: String
    /// The bytes copied.
    let bytes: Int
    private let descriptor: Int32

    /// Copies standard input into a file made in `directory`.
    /// - Throws: `IOError` when the file cannot be made or written, or standard input read.
    init(into directory: String) throws {
        let name = directory + "/.ingest-stdin-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let made = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard made >= 0 else { throw IOError(errno: errno, operation: "make a file for standard input in", path: directory) }
        unlink(name)
        descriptor = made
        path = "/proc/self/fd/\(made)"
        do {
            bytes = try Self.copy(from: STDIN_FILENO, to: made, directory: directory)
        } catch {
            close(made)
            throw error
        }
    }

    deinit { close(descriptor) }

    /// Makes the copy the process's standard input, from its first byte: the import then
    /// reads "-" as it would have, and the run records a feed read once from standard input.
    /// - Throws: `IOError` when the descriptor cannot be moved.
    func becomeStandardInput() throws {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw IOError(errno: errno, operation: "rewind the copy of standard input at", path: path) }
        guard dup2(descriptor, STDIN_FILENO) == STDIN_FILENO else { throw IOError(errno: errno, operation: "read the copy of standard input as standard input from", path: path) }
    }

    private static func copy(from input: Int32, to output: Int32, directory: String) throws -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var total = 0
        while true {
            let n = read(input, buffer.baseAddress, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw IOError(errno: errno, operation: "read", path: "standard input")
            }
            if n == 0 { return total }
            var written = 0
            while written < n {
                let w = write(output, buffer.baseAddress! + written, n - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    throw IOError(errno: errno, operation: "copy standard input into a file in", path: directory)
                }
                written += w
            }
            total += n
        }
    }
}
