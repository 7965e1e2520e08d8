import CYajl

/// NDJSON whose malformed lines are rejected as records (`FeedOptions.rejectsMalformedLines`):
/// lines are independent, so one that is not a JSON value (or holds more than one, or
/// runs into the next line) becomes a refused record, with its line, column and reason
/// and its text, and the feed reads on from the next line, as DuckDB's `ignore_errors`
/// and sqlite-utils' line mode do.
///
/// The parse then feeds yajl one line at a time, so that an error always lies in the
/// line being fed and a record never runs past its line's end unnoticed.
extension FeedParser {
    /// Feed errors that make a line malformed (others, and the record handler's, stop the read).
    private static let lineErrors: Set<FeedError.Kind> = [.malformedJSON, .invalidUTF8, .multipleValuesOnLine, .truncated, .trailingContent]

    func parseLines(_ block: UnsafeRawBufferPointer, base: Int) throws {
        var start = 0
        while start < block.count {
            let rest = UnsafeRawBufferPointer(rebasing: block[start...])
            let newline = rest.firstIndex(of: 0x0A)
            let length = newline.map { $0 + 1 } ?? rest.count
            let line = UnsafeRawBufferPointer(rebasing: rest[0..<length])
            if malformedLine != nil {
                // The rest of a malformed line: kept for its reject, not parsed.
                malformedLine!.text.append(contentsOf: line[0..<(newline ?? length)].prefix(max(0, options.maxRecordBytes - malformedLine!.text.count)))
                tracker.advance(over: line)
                if newline != nil { try rejectMalformedLine(nextLine: base + start + length) }
                start += length
                continue
            }
            do {
                try parseBlock(line, base: base + start)
            } catch let failure as FeedError where !handlerFailed && Self.lineErrors.contains(failure.kind) {
                // The parse stopped inside the line, before it moved the position past it.
                try beginMalformedLine(failure, line: line, base: base + start)
                tracker.advance(over: line)
                if newline != nil { try rejectMalformedLine(nextLine: base + start + length) }
                start += length
                continue
            }
            // A line that ends inside its record would run into the next one: NDJSON holds a value per line.
            if newline != nil, depth > 0 || !pending.isEmpty {
                let position = SourcePosition(byteOffset: gapStart, line: tracker.line - 1, column: 1)
                let failure = FeedError(.truncated, "the line ends inside record \(recordCount + 1) (NDJSON holds one value per line)",
                                        at: position, source: name)
                var text = pending
                while let last = text.last, last == 0x0A || last == 0x0D { text.removeLast() }
                malformedLine = (failure, gapStart, Array(text.prefix(options.maxRecordBytes)))
                try rejectMalformedLine(nextLine: base + start + length)
            }
            start += length
        }
    }

    /// The line being parsed is malformed: what it holds so far becomes its reject's text.
    private func beginMalformedLine(_ failure: FeedError, line: UnsafeRawBufferPointer, base: Int) throws {
        // The line began where the record being read began (carried from earlier reads), or in this one.
        let first = pending.isEmpty ? skipSeparators(in: line, from: max(gapStart - base, 0)) : 0
        let start = pending.isEmpty ? base + first : gapStart
        var text = pending
        var end = line.count
        while end > first, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        if first < end { text.append(contentsOf: line[first..<end]) }
        malformedLine = (failure, start, Array(text.prefix(options.maxRecordBytes)))
    }

    /// Hands the malformed line on as a refused record and starts the next line afresh.
    private func rejectMalformedLine(nextLine: Int) throws {
        guard let line = malformedLine else { return }
        malformedLine = nil
        var reason = line.error
        reason.message = "malformed line \(reason.position.line), column \(reason.position.column) (byte \(reason.position.byteOffset)): \(reason.message)"
        var record = FeedRecord(index: recordCount, bytes: UnsafeRawBufferPointer(start: nil, count: 0), byteOffset: line.start)
        record.refusal = reason
        record.refusedText = line.text
        // yajl stops for good at an error: the next line gets a handle and a record state of its own.
        makeHandle()
        state.pointee.depth = 0
        state.pointee.capture_depth = -1
        state.pointee.members_lost = 0
        state.pointee.value_escaped = 0
        state.pointee.end_count = 0
        pending.removeAll(keepingCapacity: true)
        refusal = nil
        failure = nil
        strict = StrictJSONBytes()
        gapStart = nextLine
        gapSawNewline = true
        try onRecord?(record)
        recordCount += 1
        malformedLines += 1
    }

    /// The feed's end in line mode: a last line without its newline that is malformed (or
    /// unfinished) is rejected like any other. True when that ended the feed.
    func finishLines(totalBytes: Int) throws -> Bool {
        if malformedLine != nil {
            try rejectMalformedLine(nextLine: totalBytes)
            return recordCount > 0
        }
        guard depth > 0 || !pending.isEmpty else { return false }
        buffer = UnsafeRawBufferPointer(start: nil, count: 0)
        bufferBase = totalBytes
        let failure = error(.truncated, "the feed ends inside record \(recordCount + 1), which began at byte \(gapStart)")
        malformedLine = (failure, gapStart, Array(pending.prefix(options.maxRecordBytes)))
        try rejectMalformedLine(nextLine: totalBytes)
        return true
    }
}
