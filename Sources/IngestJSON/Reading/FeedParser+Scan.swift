import CYajl

/// The fast lane through an array of records (top-level, or at a key path) and through
/// NDJSON whose malformed lines stop the feed: after each record yajl ends, the parser
/// stops yajl and takes the records after it with `cscan_next_record` (record_scan.h),
/// which checks JSON's grammar as it finds each record's bounds and member ends in one pass
/// of about a fifth of yajl's instructions. Where the scan takes nothing (the array's end, a
/// record cut by the read, anything malformed or over a limit), a fresh yajl handle is
/// brought to the same place, just past a record, and reads on from there as it always
/// does: every error, refusal and message is still yajl's.
extension FeedParser {
    /// What a fresh handle parses, muted, to stand where the scan stopped: just past a
    /// record inside the records array, which is the top-level value or nested in an
    /// object per key of the path (the keys' names do not matter to yajl).
    private var pastARecord: [UInt8] {
        // NDJSON's handle takes many top-level values: one done is where the scan stops.
        options.shape == .ndjson ? Array("{}".utf8) : Array((String(repeating: #"{"":"#, count: recordsDepth - 1) + "[{}").utf8)
    }

    /// Delivers the records the scan takes from `start` in the current buffer; returns
    /// where it stopped (just past the last record taken, or `start`).
    /// - Throws: the record handler's error.
    func scanRecords(_ bytes: UnsafePointer<UInt8>, count: Int, from start: Int) throws -> Int {
        var position = start
        var first = 0
        var end = 0
        // Levels a record may open: the array holds one of the limit.
        let levels = Int32(clamping: options.maxDepth - recordsDepth)
        var taken = 0
        let lines: Int32 = options.shape == .ndjson ? 1 : 0
        while cscan_next_record(state, bytes, count, position, lines, levels, options.maxRecordBytes, &first, &end) != 0 {
            guard deliver(UnsafeRawBufferPointer(start: bytes + first, count: end - first), start: bufferBase + first, end: end) else {
                throw failure!
            }
            position = end
            taken += 1
        }
        // A feed whose records the scan never takes (too deep, say) would pay for a fresh
        // handle per record: after 64 such scans in a row it is left to yajl.
        scannedRecords += taken
        emptyScans = taken == 0 ? emptyScans + 1 : 0
        if emptyScans >= 64 { scansRecords = false }
        return position
    }

    /// A fresh yajl handle that stands where the scan stopped.
    func restartHandle() {
        makeHandle()
        state.pointee.mute = 1
        let status = pastARecord.withUnsafeBufferPointer { yajl_parse(handle, $0.baseAddress!, $0.count) }
        state.pointee.mute = 0
        if status != yajl_status_ok { fatalError("yajl refused the array prefix it is restarted with") }
    }
}
