import Foundation
import IngestStore
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.0 server for one document: `GET /metrics` answers with what `body`
/// makes now, in Prometheus' text format; any other path is 404, any other method 405.
/// One connection at a time, each closed after its answer; a client that sends nothing
/// is dropped after a few seconds, so a stalled scraper cannot hold the run's exit.
final class MetricsEndpoint: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let port: Int
    private let socket: Int32
    private let thread = ManagedThread(name: "ingest.metrics-http")
    private let body: @Sendable () -> [UInt8]

    /// Listens on `host` (an IPv4 address) and `port` (0: a free one, then `port` says which).
    /// - Throws: `Failure` naming what the system refused.
    init(host: String, port: Int, body: @escaping @Sendable () -> [UInt8]) throws {
        self.body = body
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw Failure(description: "\(host) is not an IPv4 address (such as 127.0.0.1 or 0.0.0.0)")
        }
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "cannot make a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on \(host):\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        socket = fd
    }

    func start() {
        let (socket, body) = (socket, body)
        thread.start { stop in
            while !stop.isStopped {
                let connection = accept(socket, nil, nil)
                if connection < 0 {
                    if errno == EINVAL || errno == EBADF { return }  // shut down by stop()
                    // Out of descriptors or buffers, a client gone: the listener is still there.
                    if errno != EINTR && errno != ECONNABORTED { stop.wait(seconds: 0.1) }
                    continue
                }
                // Not inherited by a child process the run starts (Glibc exports no accept4).
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                Self.answer(connection, body)
                close(connection)
            }
        }
    }

    /// Stops listening; a scrape under way is answered first.
    func stop() {
        thread.stopRequest.request()
        // Wakes the accept: on Linux, shutting a listening socket down ends it with EINVAL.
        shutdown(socket, Int32(SHUT_RDWR))
        _ = thread.join(waitingAtMost: 10)
        close(socket)
    }

    private static func answer(_ connection: Int32, _ body: () -> [UInt8]) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = readHead(connection) else { return }
        let words = request.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }.split(separator: UInt8(ascii: " "))
        let method = words.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let target = words.count > 1 ? String(decoding: words[1], as: UTF8.self) : ""
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let (status, type, content): (String, String, [UInt8])
        if method != "GET" && method != "HEAD" {
            (status, type, content) = ("405 Method Not Allowed", "text/plain; charset=utf-8", Array("GET /metrics only\n".utf8))
        } else if path != "/metrics" {
            (status, type, content) = ("404 Not Found", "text/plain; charset=utf-8", Array("not found: the metrics are at /metrics\n".utf8))
        } else {
            (status, type, content) = ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body())
        }
        var response = Array("HTTP/1.0 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(content.count)\r\nConnection: close\r\n\r\n".utf8)
        if method != "HEAD" { response += content }
        var sent = 0
        while sent < response.count {
            let wrote = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { return }
            sent += wrote
        }
    }

    /// The request up to its blank line (at most 16 KiB), or nil when the client sent
    /// none in time or closed.
    private static func readHead(_ connection: Int32) -> [UInt8]? {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // A client that trickles its request gets 5 s in all, not 5 s a byte.
        let deadline = ContinuousClock.now + .seconds(5)
        while head.count < 16_384 {
            guard ContinuousClock.now < deadline else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return head.isEmpty ? nil : head }
            head += buffer[..<count]
            let text = String(decoding: head, as: UTF8.self)
            if text.contains("\r\n\r\n") || text.contains("\n\n") { return head }
        }
        return head
    }
}
