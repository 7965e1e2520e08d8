import CYajl

// Where each record begins and ends, what is carried from one read to the next, and how a
// record is handed on (or refused for a limit).
extension FeedParser {
    var currentIndex: Int { min(segmentStart + Int(yajl_get_bytes_consumed(handle)), buffer.count) }

    @inline(__always)
    private static func isSeparator(_ byte: UInt8) -> Bool {
        // The colon comes between a keyed record's name and its value.
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == 0x2C || byte == 0x3A
    }

    /// Index of the first byte at or after `start` that is not whitespace or a comma.
    func skipSeparators(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        while i < bytes.count, Self.isSeparator(bytes[i]) {
            if bytes[i] == 0x0A { gapSawNewline = true }
            i += 1
        }
        return i
    }

    /// Keeps the part of a record that the current buffer holds, as the buffer is about to be reused.
    func carryPending() throws {
        if refusal == nil {
            var start = max(gapStart - bufferBase, 0)
            if pending.isEmpty {
                start = skipSeparators(in: buffer, from: start)
                gapStart = bufferBase + start
                if start < buffer.count, let failure = checkOwnLine(at: start) { throw failure }
            }
            pending.append(contentsOf: buffer[start...])
            guard pending.count > options.maxRecordBytes else { return }
            refuse(error(.recordTooLarge,
                "record \(recordCount + 1) (from byte \(gapStart)) is larger than the record size limit of \(options.maxRecordBytes) bytes"),
                   start: gapStart, sizeKnown: false)
        }
        if refusedSoFar > refusedReadLimit { throw pastReadLimit() }
    }

    /// A record larger than twice the size limit stops the feed, wherever it falls in the
    /// reads (found by probing: one that ended inside a read was refused, the same one
    /// across two reads stopped the feed).
    func pastReadLimit() -> FeedError {
        error(.recordTooLarge,
              "record \(recordCount + 1) (from byte \(refusedStart)) is larger than \(refusedReadLimit) bytes, twice the record size limit of \(options.maxRecordBytes) bytes: the feed is not read past it")
    }

    /// The record in progress broke a limit: it is read to its end without being held.
    func refuse(_ failure: FeedError, start: Int, sizeKnown: Bool = true) {
        guard refusal == nil else { return }
        refusalSizeUnknown = !sizeKnown
        // Read past without being held: its member ends are not kept either.
        cyajl_lose_members(state)
        refusal = failure
        refusedStart = start
        pending.removeAll(keepingCapacity: false)
    }

    /// Where the record in progress began.
    func recordStart() -> Int {
        pending.isEmpty ? bufferBase + skipSeparators(in: buffer, from: max(gapStart - bufferBase, 0)) : gapStart
    }

    /// yajl ended a record: it is handed on, and the scan takes the ones after it.
    func endRecord() -> Bool {
        guard takeRecord() else { return false }
        if scansRecords && currentIndex < buffer.count {
            // Stops yajl here (a callback's 0): `parseBlock` goes on with the scan.
            resumeScan = true
            return false
        }
        return true
    }

    private func takeRecord() -> Bool {
        let end = currentIndex
        if let refusal { return deliverRefused(refusal, end: end) }
        let start: Int
        if pending.isEmpty {
            let first = skipSeparators(in: buffer, from: max(gapStart - bufferBase, 0))
            if let failure = checkOwnLine(at: first) {
                self.failure = failure
                return false
            }
            start = bufferBase + first
            return deliver(UnsafeRawBufferPointer(rebasing: buffer[first..<end]), start: start, end: end)
        }
        pending.append(contentsOf: buffer[0..<end])
        start = gapStart
        // A copy of its own: `deliver` empties `pending` (and may free its buffer) while these bytes are read.
        let carried = pending
        return carried.withUnsafeBytes { deliver($0, start: start, end: end) }
    }

    /// In NDJSON a record that begins (at `index`) on the line where the one before ended is an error.
    func checkOwnLine(at index: Int) -> FeedError? {
        guard options.shape == .ndjson, recordCount > 0, !gapSawNewline else { return nil }
        return error(.multipleValuesOnLine,
            "record \(recordCount + 1) starts on the line of the record before it (NDJSON holds one value per line)",
            at: index)
    }

    /// The record in progress is `size` bytes, over the size limit.
    func sizeRefusal(size: Int, start: Int) -> FeedError {
        error(.recordTooLarge, "record \(recordCount + 1) (from byte \(start)) is \(size) bytes, over the record size limit of \(options.maxRecordBytes) bytes")
    }

    func deliver(_ bytes: UnsafeRawBufferPointer, start: Int, end: Int) -> Bool {
        if bytes.count > options.maxRecordBytes {
            refuse(sizeRefusal(size: bytes.count, start: start), start: start)
            return deliverRefused(refusal!, end: end)
        }
        var record = FeedRecord(index: recordCount, bytes: bytes, byteOffset: start, key: recordKey, keyText: recordKeyText)
        if state.pointee.capture_depth >= 0, state.pointee.members_lost == 0, bytes.first == UInt8(ascii: "{") {
            record.memberEnds = UnsafeBufferPointer(start: state.pointee.ends, count: Int(state.pointee.end_count))
        }
        state.pointee.capture_depth = -1
        do {
            try onRecord?(record)
        } catch {
            failure = error
            handlerFailed = true
            return false
        }
        recordCount += 1
        gapStart = bufferBase + end
        gapSawNewline = false
        // Most records lie inside one read: nothing was carried, and the generic removeAll is skipped.
        if !pending.isEmpty || pending.capacity > 1 << 20 { pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20) }
        return true
    }

    /// Hands on a record that broke a limit, empty, with the error it broke it with.
    func deliverRefused(_ failure: FeedError, end: Int) -> Bool {
        state.pointee.capture_depth = -1
        let size = bufferBase + end - refusedStart
        if size > refusedReadLimit {
            self.failure = pastReadLimit()
            return false
        }
        // Refused as it crossed a read, before its size was known: said as one read whole says it
        // (found by probing: the same record got either message, by where the reads fell).
        var failure = failure
        if refusalSizeUnknown {
            failure = sizeRefusal(size: size, start: refusedStart)
        }
        do {
            try onRecord?(FeedRecord(index: recordCount, bytes: UnsafeRawBufferPointer(start: nil, count: 0), byteOffset: refusedStart,
                                     key: recordKey, keyText: recordKeyText, refusal: failure))
        } catch {
            self.failure = error
            handlerFailed = true
            return false
        }
        recordCount += 1
        gapStart = bufferBase + end
        gapSawNewline = false
        refusal = nil
        return true
    }
}
