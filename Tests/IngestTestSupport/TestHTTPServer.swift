import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on the loopback for the feed tests: one document, with an `ETag`,
/// `Last-Modified` and `Range` requests (`bytes=N-`, `If-Range`), and faults to order:
/// a connection dropped mid-body, `Range` ignored, a slow body. Each request is logged.
public final class TestHTTPServer: Sendable {
    public struct Document: Sendable {
        public var bytes: [UInt8]
        public var etag: String
        public var lastModified = "Sun, 29 Nov 2026 10:00:00 GMT"

        public init(bytes: [UInt8], etag: String) {
            self.bytes = bytes
            self.etag = etag
        }
    }

    /// What the server does to the next answers.
    public struct Faults: Sendable {
        /// Closes the connection after this many body bytes, in the next answer only.
        public var dropNextAfter: Int?
        /// Answers every `Range` request with the whole document (200).
        public var ignoresRange = false
        /// Waits this long after each 64 KiB of a body.
        public var pause: Duration = .zero

        public init() {}
    }

    public let port: Int
    private let socket: Int32
    private let state: Mutex<(document: Document, faults: Faults, log: [String])>
    private let stopped = Atomic<Bool>(false)

    /// The address of the document (any path serves it but `/missing`, which is 404).
    public func url(_ path: String = "/feed.json") -> String { "http://127.0.0.1:\(port)\(path)" }

    public var log: [String] { state.withLock { $0.log } }

    public func change(_ body: (inout Document, inout Faults) -> Void) {
        state.withLock { body(&$0.document, &$0.faults) }
    }

    public init(_ document: Document) throws {
        state = Mutex((document, Faults(), []))
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        socket = fd
        // The loop holds the server only while it answers: a server the test let go is
        // deinitialised, which stops the loop (a strong capture kept every server's thread
        // waiting in accept(2) until the test process ended).
        let thread = Thread { [weak self, fd] in Self.acceptLoop(fd) { self } }
        thread.start()
    }

    deinit { stop() }

    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }

    private static func acceptLoop(_ socket: Int32, _ server: () -> TestHTTPServer?) {
        while true {
            let connection = accept(socket, nil, nil)
            if connection < 0 {
                // `stop` shuts the socket down, which ends a waiting accept with EINVAL.
                if errno == EBADF || errno == EINVAL { return }
                continue
            }
            guard let server = server(), !server.stopped.load(ordering: .relaxed) else {
                close(connection)
                return
            }
            Thread {
                server.answer(connection)
                close(connection)
            }.start()
        }
    }

    /// Reads one request and answers it.
    private func answer(_ connection: Int32) {
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
            let n = recv(connection, &buffer, buffer.count, 0)
            guard n > 0 else { return }
            request += buffer[0..<n]
        }
        let lines = String(decoding: request, as: UTF8.self).components(separatedBy: "\r\n")
        let path = lines[0].split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let (document, faults) = state.withLock { state in
            let taken = (state.document, state.faults)
            state.faults.dropNextAfter = nil
            return taken
        }
        var start = 0
        var status = 200
        if path == "/missing" {
            status = 404
        } else if let range = headers["range"], range.hasPrefix("bytes="), range.hasSuffix("-"), !faults.ignoresRange,
                  headers["if-range"].map({ $0 == document.etag }) ?? true, let from = Int(range.dropFirst(6).dropLast()) {
            (start, status) = from >= document.bytes.count ? (document.bytes.count, 416) : (from, 206)
        }
        state.withLock { $0.log.append("\(path) range=\(headers["range"] ?? "-") status=\(status)") }
        let body = status == 404 ? Array("not here".utf8) : status == 416 ? [] : Array(document.bytes[start...])
        var head = "HTTP/1.1 \(status) \(status == 206 ? "Partial Content" : status == 404 ? "Not Found" : status == 416 ? "Range Not Satisfiable" : "OK")\r\n"
        head += "Content-Length: \(body.count)\r\nETag: \(document.etag)\r\nLast-Modified: \(document.lastModified)\r\nAccept-Ranges: bytes\r\nConnection: close\r\n"
        if status == 206 { head += "Content-Range: bytes \(start)-\(document.bytes.count - 1)/\(document.bytes.count)\r\n" }
        if status == 416 { head += "Content-Range: bytes */\(document.bytes.count)\r\n" }
        head += "\r\n"
        guard send(Array(head.utf8), connection) else { return }
        var sent = 0
        while sent < body.count {
            var piece = min(65_536, body.count - sent)
            if let drop = faults.dropNextAfter { piece = min(piece, drop - sent) }
            guard piece > 0, send(Array(body[sent..<(sent + piece)]), connection) else { return }
            sent += piece
            if faults.pause > .zero { Thread.sleep(forTimeInterval: Double(faults.pause.components.attoseconds) / 1e18 + Double(faults.pause.components.seconds)) }
        }
    }

    private func send(_ bytes: [UInt8], _ connection: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
}
