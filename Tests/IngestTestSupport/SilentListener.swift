import Foundation

/// A socket on 127.0.0.1 that takes connections (the kernel completes them into its
/// backlog) and never answers: what a stopped server, or a firewall that swallows
/// packets past the handshake, looks like to libpq.
public final class SilentListener: @unchecked Sendable {
    public let descriptor: Int32
    /// The port it listens on (one the system chose).
    public let port: Int

    /// Opens the socket.
    /// - Throws: `SilentListener.Failure` when it cannot listen.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw Failure(errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    public struct Failure: Error {
        public var errno: Int32
    }
}
