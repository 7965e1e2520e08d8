import CYajl

// How the parser follows yajl's events: where the records array begins, where each record
// ends, the key path on the way to it, and the depth limit.
extension FeedParser {
    // MARK: - Events

    /// An event the C callbacks passed on (see shim.h for which).
    func event(_ code: Int32) -> Bool {
        switch Int(code) {
        case Int(CYAJL_NULL): return scalar("null")
        case Int(CYAJL_BOOLEAN): return scalar("a boolean")
        case Int(CYAJL_NUMBER): return scalar("a number")
        case Int(CYAJL_STRING): return scalar("a string")
        case Int(CYAJL_START_MAP): return startContainer(isObject: true)
        case Int(CYAJL_END_MAP): return endContainer(isObject: true)
        case Int(CYAJL_START_ARRAY): return startContainer(isObject: false)
        default: return endContainer(isObject: false)
        }
    }

    private func scalar(_ kind: String) -> Bool {
        if expectingRecords {
            return fail(.keyPathNotAnArray, "the value at key path '\(keyPathText)' is \(kind), not \(keyed ? "an object of records" : "an array of records")")
        }
        if depth == 0 {
            switch options.shape {
            case .array:
                return fail(.notAnArray, "expected a top-level array of records, found \(kind)")
            case .keyPath:
                return fail(.keyPathNotFound, "records at key path '\(keyPathText)' need a top-level object, found \(kind)")
            case .keyed:
                return fail(.notAnArray, "expected a top-level object (keyed records), found \(kind)")
            case .ndjson:
                return endRecord()
            }
        }
        return inRecords && depth == recordsDepth ? endRecord() : true
    }

    private func startContainer(isObject: Bool) -> Bool {
        let bracket = max(currentIndex - 1, 0)
        let kind = isObject ? "an object" : "an array"
        if expectingRecords {
            guard isObject == keyed else {
                return fail(.keyPathNotAnArray, keyed
                    ? "the value at key path '\(keyPathText)' is an array, not an object of keyed records"
                    : "the value at key path '\(keyPathText)' is an object, not an array of records (its values are records when the feed is read as keyed)", at: bracket)
            }
            expectingRecords = false
            recordsFound = true
            return enterRecords()
        }
        if depth == 0 {
            switch options.shape {
            case .array:
                return isObject ? fail(.notAnArray,
                    "expected a top-level array of records, found an object", at: bracket)
                    : enterRecords()
            case .keyPath:
                if !isObject {
                    return fail(.keyPathNotFound, "records at key path '\(keyPathText)' need a top-level object, found \(kind)", at: bracket)
                }
            case .keyed(let keys):
                if !isObject {
                    return fail(.notAnArray, "keyed records need a top-level object, found \(kind)", at: bracket)
                }
                if keys.isEmpty {
                    recordsFound = true
                    return enterRecords()
                }
            case .ndjson:
                break
            }
        }
        depth += 1
        if depth > options.maxDepth {
            guard inRecords && depth > recordsDepth else {
                return fail(.depthLimitExceeded, "the feed nests deeper than the limit of \(options.maxDepth) levels", at: bracket)
            }
            // Read on to the record's end (the C callbacks count its levels), holding none of it.
            if refusal == nil {
                refuse(error(.depthLimitExceeded, "record \(recordCount + 1) nests deeper than the limit of \(options.maxDepth) levels", at: bracket),
                       start: recordStart())
            }
            return true
        }
        if keyPath != nil && !inRecords { keyStack.append(nil) }
        return true
    }

    private func enterRecords() -> Bool {
        depth += 1
        inRecords = true
        gapStart = bufferBase + currentIndex
        gapSawNewline = false
        return true
    }

    private func endContainer(isObject: Bool) -> Bool {
        if inRecords && depth == recordsDepth && options.shape != .ndjson {
            inRecords = false
            pending.removeAll()
            depth -= 1
            if depth == 0 { topLevelEnd = bufferBase + currentIndex }
            return true
        }
        depth -= 1
        if depth == 0 && options.shape != .ndjson { topLevelEnd = bufferBase + currentIndex }
        if keyPath != nil && !inRecords { keyStack.removeLast() }
        return inRecords && depth == recordsDepth ? endRecord() : true
    }

    func mapKey(_ key: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
        if keyed && inRecords && depth == recordsDepth {
            // A keyed record's name: its bytes begin after it (and the colon).
            recordKey = String(decoding: UnsafeBufferPointer(start: key, count: length), as: UTF8.self)
            recordKeyText = nil
            // A key yajl had to decode (it had escapes) is not in the buffer as read.
            let inPlace = key.map { pointer in
                buffer.baseAddress.map { UnsafeRawPointer(pointer) >= $0 && UnsafeRawPointer(pointer) < $0 + buffer.count } ?? false
            } ?? true
            if !inPlace {
                // The name as read. Nothing carried over: the gap before it, and so the name,
                // began in this read. Else they began in an earlier one (once a read at most).
                let read = UnsafeRawBufferPointer(rebasing: buffer[0..<currentIndex])
                let text = Self.lastString(in: read, after: pending.isEmpty ? nil : pending)
                if let text, text.withUnsafeBytes({ JSONValueBuilder.loneSurrogate(in: $0) }) != nil {
                    recordKeyText = text
                }
            }
            pending.removeAll(keepingCapacity: true)
            gapStart = bufferBase + currentIndex
            gapSawNewline = false
            return true
        }
        guard let keyPath, !inRecords, depth <= keyPath.count, depth > 0 else { return true }
        let text = String(decoding: UnsafeBufferPointer(start: key, count: length), as: UTF8.self)
        if depth == 1 && topLevelKeys.count < 20 && !topLevelKeys.contains(text) { topLevelKeys.append(text) }
        keyStack[depth - 1] = text
        // A member on the way to the records given again after them would replace them
        // (the last of two equal members wins): refused as the whole path given twice is.
        if recordsFound, depth < keyPath.count, keyStack[..<depth].elementsEqual(keyPath[..<depth], by: { $0 == $1 }) {
            return fail(.keyPathRepeated, "key path '\(keyPathText)' occurs more than once in the feed ('\(keyPath[..<depth].joined(separator: "."))' is given again after the records)")
        }
        if depth == keyPath.count && keyStack.elementsEqual(keyPath, by: { $0 == $1 }) {
            if recordsFound {
                return fail(.keyPathRepeated, "key path '\(keyPathText)' occurs more than once in the feed")
            }
            expectingRecords = true
        }
        return true
    }

    private var keyPathText: String { keyPath?.joined(separator: ".") ?? "" }
}
