import CLibPQ

/// The rows of a `COPY … FROM STDIN` under way (`PostgresConnection.copyIn(_:write:)`).
struct CopyStream: ~Copyable {
    /// Rows made and not sent yet: append to it, then call `rowEnded()`. It starts small and
    /// doubles as rows come, so a COPY of a few rows does not take a piece's room.
    var data = ByteBuffer(capacity: 1 << 12)
    let raw: OpaquePointer
    /// libpq's reason when a piece could not be sent (the COPY then ends with it, and fails).
    private(set) var failure: String?
    /// Sent once this much is made: large enough that a piece costs few calls, small enough
    /// that the server starts on the batch early.
    static let piece = 1 << 17

    /// Whether rows wait for `send()` however many there are: for a piece made before its
    /// `COPY` starts.
    private let holding: Bool

    init(raw: OpaquePointer, holding: Bool = false) {
        self.raw = raw
        self.holding = holding
    }

    /// Sends what is made once it reaches a piece.
    @inline(__always)
    mutating func rowEnded() {
        if data.count >= Self.piece && !holding { send() }
    }

    /// Sends what is made (libpq writes it out, in blocking mode, as the server takes it).
    mutating func send() {
        guard failure == nil else { return data.removeAll() }
        var failed: String?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, failed == nil {
                let count = min(1 << 20, buffer.count - offset)
                let sent = PQputCopyData(raw, (buffer.baseAddress! + offset).assumingMemoryBound(to: CChar.self), Int32(count))
                if sent != 1 { failed = String(cString: PQerrorMessage(raw)) }
                offset += count
            }
        }
        failure = failed
        data.removeAll()
    }
}
