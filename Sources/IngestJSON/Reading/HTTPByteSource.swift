import CCurl
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A feed read over HTTP(S) with the system's libcurl, as it arrives (the read pulls the
/// transfer along: no thread, no buffer beyond what one poll delivers).
///
/// With a spool file (the split's, in its chunk directory) every byte received is also
/// kept there, with the response's validators (`ETag`, `Last-Modified`, size) beside it:
/// read again (a resumed split), the spool's bytes come first and the rest is asked for
/// with `Range: bytes=N-` and `If-Range`, so a resumed run downloads only what it had not.
/// A connection that drops mid-body is continued the same way, up to `retries` times. A
/// server that ignores `Range` answers 200 with the whole body: when its validators are
/// the ones recorded, the bytes already had are skipped; when they differ, the feed
/// changed, and the read stops with `HTTPFeedError.changed` rather than mix two feeds.
package final class HTTPByteSource: ByteSource {
    /// Whether `path` names a feed over HTTP(S) rather than a file.
    package static func isURL(_ path: String) -> Bool {
        let lower = path.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The spool's name in a chunk directory, and its validators' beside it.
    package static let spoolName = "feed.download"
    package static let validatorsName = "feed.download.json"

    /// What a response said of the resource, to know it again.
    package struct Validators: Codable, Equatable, Sendable {
        var url: String
        var etag: String?
        var lastModified: String?
        /// The resource's size (Content-Length of a whole answer, or Content-Range's total).
        var size: Int?
        /// Bytes of the spool known to be on disk (flushed), when spooling.
        var length: Int = 0

        /// Whether `other` (a new answer) is the same resource: every validator both have agrees.
        func sameResource(as other: Validators) -> Bool {
            func agree<T: Equatable>(_ a: T?, _ b: T?) -> Bool { a == nil || b == nil || a == b }
            return agree(etag, other.etag) && agree(lastModified, other.lastModified) && agree(size, other.size)
        }
    }

    package let url: String
    package private(set) var totalBytes: Int?
    private let spool: String?
    private let retries: Int
    private let isCancelled: (@Sendable () -> Bool)?

    private var multi: UnsafeMutableRawPointer?
    private var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The spool's bytes still to hand on before the network's (a resumed read).
    private var spoolReader: Int32 = -1
    private var spoolWriter: Int32 = -1
    private var sinceFlush = 0
    /// Bytes of the resource received (spooled or not): where a Range request starts.
    private var received = 0
    private var recorded: Validators?
    /// The answer under way: its status and validators, read from its headers.
    private var status = 0
    private var answer = Validators(url: "")
    private var contentRangeStart: Int?
    private var bodyStarted = false
    /// Bytes of a 200 answer to drop: the server ignored Range, and they were had before.
    private var skip = 0
    private var pending: [UInt8] = []
    private var pendingStart = 0
    private var finished = false
    private var attempts = 0
    private var failure: (any Error)?

    /// - Parameters:
    ///   - url: the feed's address.
    ///   - spool: where to keep the bytes received (nil: nowhere).
    ///   - retries: how many times a transfer that breaks off is continued.
    ///   - isCancelled: asked ten times a second while the read waits for the network.
    /// - Throws: `IOError` when the spool cannot be opened.
    package init(url: String, spool: String? = nil, retries: Int = 5, isCancelled: (@Sendable () -> Bool)? = nil) throws {
        self.url = url
        self.spool = spool
        self.retries = retries
        self.isCancelled = isCancelled
        if let spool { try openSpool(spool) }
    }

    deinit {
        // What arrived before a stop is kept for the resume (a crash keeps what the last flush did).
        try? flushSpool()
        closeTransfer()
        if spoolReader >= 0 { close(spoolReader) }
        if spoolWriter >= 0 { close(spoolWriter) }
    }

    /// How much of the feed at `url` the spool in `directory` holds, flushed, and the feed's
    /// size when known; nil when it holds none of it.
    package static func spooled(in directory: String, url: String) -> (length: Int, size: Int?)? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + validatorsName),
              let kept = try? JSONDecoder().decode(Validators.self, from: data), kept.url == url,
              let size = FileOps.fileSize(directory + "/" + spoolName), size >= kept.length else { return nil }
        return (kept.length, kept.size)
    }

    private var validatorsPath: String? { spool.map { ($0 as NSString).deletingLastPathComponent + "/" + Self.validatorsName } }

    /// Continues the spool a read before kept (cut to what was flushed), or starts it anew.
    private func openSpool(_ spool: String) throws {
        if let path = validatorsPath, let data = FileManager.default.contents(atPath: path),
           let kept = try? JSONDecoder().decode(Validators.self, from: data), kept.url == url,
           let size = FileOps.fileSize(spool), size >= kept.length, kept.length > 0 {
            // Through a descriptor that refuses a link: what a link names is not Ingest's to cut.
            spoolWriter = open(spool, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)
            guard spoolWriter >= 0 else { throw IOError(errno: errno, operation: "open", path: spool) }
            guard ftruncate(spoolWriter, off_t(kept.length)) == 0 else { throw IOError(errno: errno, operation: "truncate", path: spool) }
            recorded = kept
            totalBytes = kept.size
            received = kept.length
            spoolReader = open(spool, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard spoolReader >= 0 else { throw IOError(errno: errno, operation: "open", path: spool) }
        } else {
            spoolWriter = try FileOps.openForWriting(spool)
        }
        guard spoolWriter >= 0 else { throw IOError(errno: errno, operation: "open", path: spool) }
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if spoolReader >= 0 {
            let n = Glibc.read(spoolReader, buffer.baseAddress, buffer.count)
            if n > 0 { return n }
            close(spoolReader)
            spoolReader = -1
        }
        while pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            if finished { return 0 }
            try pump()
        }
        let n = min(buffer.count, pending.count - pendingStart)
        pending.withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + pendingStart, byteCount: n)
        }
        pendingStart += n
        return n
    }

    /// Runs the transfer until it delivers bytes or ends; continues one that broke off.
    private func pump() throws {
        if multi == nil { try startTransfer() }
        while pending.isEmpty && !finished {
            if let isCancelled, isCancelled() { throw ReadCancelled(path: url) }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE else { continue }
                try transferEnded(message.pointee.data.result)
            }
            if let failure { throw failure }
            if pending.isEmpty && !finished && multi != nil { _ = curl_multi_poll(multi, nil, 0, 100, nil) }
        }
    }

    /// The transfer ended: the feed's end, or a break to continue from `received`.
    private func transferEnded(_ result: CURLcode) throws {
        let status = self.status
        closeTransfer()
        if let failure { throw failure }
        // Asked for the bytes after the last: the spool held the whole feed (its size unknown).
        if status == 416, received > 0 {
            finished = true
            return
        }
        let complete = result == CURLE_OK && totalBytes.map { received >= $0 } ?? (result == CURLE_OK)
        if complete {
            guard (200..<300).contains(status) else { throw HTTPFeedError.status(url: url, code: status) }
            try flushSpool()
            finished = true
            return
        }
        attempts += 1
        let reason = result == CURLE_OK ? "the connection closed early" : String(cString: curl_easy_strerror(result))
        guard attempts <= retries else {
            throw HTTPFeedError.brokenOff(url: url, received: received, size: totalBytes, reason: reason, attempts: attempts)
        }
        // A backoff between attempts (the server or the network may be restarting), not a poll.
        Thread.sleep(forTimeInterval: min(0.2 * Double(attempts), 2))
        try startTransfer()
    }

    private func startTransfer() throws {
        guard let multi = curl_multi_init(), let easy = curl_easy_init() else { throw HTTPFeedError.setup(url: url, reason: "libcurl could not start a transfer") }
        self.multi = multi
        self.easy = easy
        status = 0
        answer = Validators(url: url)
        contentRangeStart = nil
        bodyStarted = false
        skip = 0
        _ = ccurl_setopt_string(easy, CURLOPT_URL, url)
        _ = ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        _ = ccurl_setopt_long(easy, CURLOPT_MAXREDIRS, 10)
        _ = ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // A transfer that stalls (under 1 byte/s for 60 s) is a break to continue, not a wait forever.
        _ = ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, 60)
        _ = ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, 30)
        _ = ccurl_setopt_string(easy, CURLOPT_USERAGENT, "ingest")
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<HTTPByteSource>.fromOpaque(context!).takeUnretainedValue().body(data!, size * count)
        }
        _ = ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        _ = ccurl_setopt_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<HTTPByteSource>.fromOpaque(context!).takeUnretainedValue().header(data!, size * count)
        }
        if received > 0 {
            _ = ccurl_setopt_string(easy, CURLOPT_RANGE, "\(received)-")
            if let validator = recorded?.etag ?? recorded?.lastModified {
                headerList = curl_slist_append(nil, "If-Range: \(validator)")
                _ = ccurl_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList))
            }
        }
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else { throw HTTPFeedError.setup(url: url, reason: "libcurl could not start a transfer") }
    }

    private func closeTransfer() {
        if let multi, let easy { curl_multi_remove_handle(multi, easy) }
        if let easy { curl_easy_cleanup(easy) }
        if let multi { curl_multi_cleanup(multi) }
        if let headerList { curl_slist_free_all(headerList) }
        (multi, easy, headerList) = (nil, nil, nil)
    }

    /// One header line of the answer (a redirect's lines come first: a status line starts anew).
    private func header(_ data: UnsafeMutablePointer<CChar>, _ length: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            answer = Validators(url: url)
            contentRangeStart = nil
            return length
        }
        guard let colon = line.firstIndex(of: ":") else { return length }
        let name = line[..<colon].lowercased(), value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        switch name {
        case "etag": answer.etag = value
        case "last-modified": answer.lastModified = value
        case "content-length": if status == 200 { answer.size = Int(value) }
        case "content-range":
            // bytes START-END/TOTAL
            let parts = value.dropFirst("bytes ".count).split(separator: "/")
            contentRangeStart = parts.first.flatMap { Int($0.split(separator: "-").first ?? "") }
            if parts.count == 2 { answer.size = Int(parts[1]) }
        default: break
        }
        return length
    }

    /// Body bytes of the answer; returning less than `length` aborts the transfer.
    private func body(_ data: UnsafeMutablePointer<CChar>, _ length: Int) -> Int {
        if status == 416, received > 0 { return length }
        if !bodyStarted {
            bodyStarted = true
            do { try beginBody() } catch {
                failure = error
                return 0
            }
        }
        var bytes = UnsafeRawBufferPointer(start: data, count: length)
        if skip > 0 {
            let dropped = min(skip, bytes.count)
            skip -= dropped
            bytes = UnsafeRawBufferPointer(rebasing: bytes[dropped...])
        }
        guard !bytes.isEmpty else { return length }
        pending.append(contentsOf: bytes)
        received += bytes.count
        if spoolWriter >= 0 {
            do {
                try FileOps.writeAll(spoolWriter, bytes, path: spool!)
                sinceFlush += bytes.count
                if sinceFlush >= 8 << 20 { try flushSpool() }
            } catch {
                failure = error
                return 0
            }
        }
        return length
    }

    /// The answer's headers are in: is it the resource, from where it was asked for?
    private func beginBody() throws {
        guard (200..<300).contains(status) else { throw HTTPFeedError.status(url: url, code: status) }
        if let recorded, !recorded.sameResource(as: answer) {
            throw HTTPFeedError.changed(url: url, then: recorded, now: answer)
        }
        if received > 0 {
            if status == 206 {
                guard contentRangeStart == received else {
                    throw HTTPFeedError.setup(url: url, reason: "asked for the bytes from \(received), the server sent them from \(contentRangeStart.map(String.init) ?? "?")")
                }
            } else {
                // The server ignored Range (or If-Range found another version, caught above): the bytes had go.
                skip = received
            }
        }
        if recorded == nil {
            recorded = answer
            recorded?.length = received
        }
        totalBytes = totalBytes ?? answer.size
    }

    /// Makes the spooled bytes durable and records how many there are, with the validators.
    private func flushSpool() throws {
        guard spoolWriter >= 0, let spool, let path = validatorsPath, var kept = recorded else { return }
        try FileOps.sync(spoolWriter, path: spool)
        kept.length = received
        recorded = kept
        sinceFlush = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try FileOps.writeAtomically(Array(try encoder.encode(kept)), to: path)
    }
}

/// A feed over HTTP(S) that could not be read.
package enum HTTPFeedError: Error, CustomStringConvertible, Equatable {
    case status(url: String, code: Int)
    case changed(url: String, then: HTTPByteSource.Validators, now: HTTPByteSource.Validators)
    case brokenOff(url: String, received: Int, size: Int?, reason: String, attempts: Int)
    case setup(url: String, reason: String)

    package var description: String {
        switch self {
        case .status(let url, let code):
            "\(url): the server answered HTTP \(code)"
        case .changed(let url, let then, let now):
            "\(url) changed since this run began reading it (\(Self.describe(then)) then, \(Self.describe(now)) now): the run cannot go on with another feed; import it as a new run (ingest import … --abandon-run)"
        case .brokenOff(let url, let received, let size, let reason, let attempts):
            "\(url): the transfer broke off after \(received) of \(size.map(String.init) ?? "?") bytes (\(reason)), \(attempts) time(s); ingest resume continues it from there"
        case .setup(let url, let reason):
            "\(url): \(reason)"
        }
    }

    static func describe(_ validators: HTTPByteSource.Validators) -> String {
        [validators.etag.map { "ETag \($0)" }, validators.lastModified.map { "Last-Modified \($0)" }, validators.size.map { "\($0) bytes" }]
            .compactMap { $0 }.joined(separator: ", ")
    }
}
