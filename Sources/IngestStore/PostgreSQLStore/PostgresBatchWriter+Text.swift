import Foundation

// The text forms of a PostgreSQL batch write: keys as the lookups and folding tell them
// apart, and values as COPY reads them.
extension PostgresBatchWriter {
    /// Why a record cannot go to PostgreSQL as it is (a NUL character in a text value), or nil.
    /// Text cells are a record's own unescaped JSON strings, which never hold a raw NUL
    /// (JSON forbids control characters, and the split checked): only values made from
    /// escapes (`\u0000`) are looked at.
    func nulProblem(_ request: BatchInsertRequest, _ record: Int) -> String? {
        for rowIndex in request.rowRange(ofRecord: record) {
            let row = request.rows[rowIndex]
            // The plan only for the message: read for every row, it was retained and released.
            for position in 0..<shapes[row.entity].attributes {
                guard case .value(let index) = request.cells[row.firstCell + position],
                      case .string(let text) = request.values[Int(index)], Self.holdsNUL(text) else { continue }
                let info = plans[row.entity].info
                return "\(info.name).\(info.attributeNames[position]): PostgreSQL text cannot hold the character U+0000"
            }
        }
        return nil
    }

    /// Whether `text` holds U+0000: one `memchr`, not the byte-by-byte generic `contains`
    /// (400 instructions a record on a feed whose strings have escapes, callgrind).
    static func holdsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.count > 0 && memchr(bytes.baseAddress!, 0, bytes.count) != nil }
    }

    /// A row's key as bytes, as the lookups and the folding tell keys apart. PostgreSQL
    /// keeps dates to the microsecond: date keys closer than that are one key there.
    func keyBytes(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest) -> TextKey? {
        switch cell {
        case .null: return nil
        case .text(let offset, let count):
            return request.text.withUnsafeBytes { TextKey(UnsafeRawBufferPointer(rebasing: $0[Int(offset)..<Int(offset + count)])) }
        case .int(let number):
            var bytes = ByteBuffer(capacity: 20)
            Self.appendInteger(number, to: &bytes)
            return TextKey(bytes: bytes.array)
        case .double(let number) where type == .date: return TextKey(Self.keyText((number * 1e6).rounded() / 1e6))
        default:
            guard var text = keyText(cell, request) else { return nil }
            if type == .date, let seconds = Double(text) { text = Self.keyText((seconds * 1e6).rounded() / 1e6) }
            return TextKey(text)
        }
    }

    /// A value's key bytes (for the checks that name a key by its value).
    func keyBytes(_ value: Value) -> TextKey? {
        Self.keyText(value).map(TextKey.init)
    }

    /// A key as text, the form the lookups and staging tables carry it in.
    func keyText(_ cell: BatchInsertRequest.Cell, _ request: BatchInsertRequest) -> String? {
        switch cell {
        case .null: nil
        case .int(let number): String(number)
        case .double(let number): Self.keyText(number)
        case .text(let offset, let count): String(decoding: request.text[Int(offset)..<Int(offset + count)], as: UTF8.self)
        case .value(let index): Self.keyText(request.values[Int(index)])
        }
    }

    static func keyText(_ value: Value) -> String? {
        switch value {
        case .string(let text), .decimal(let text): text
        case .int(let number): String(number)
        case .double(let number): keyText(number)
        case .bool(let flag): flag ? "1" : "0"
        case .date(let date): keyText(date.timeIntervalSinceReferenceDate)
        case .uuid(let uuid): uuid.uuidString
        case .binary(let bytes): "\\x" + lowercaseHex(bytes)
        }
    }

    /// A double key as PostgreSQL tells keys apart: -0.0 is 0.0.
    static func keyText(_ number: Double) -> String {
        number == 0 ? "0.0" : "\(number)"
    }

    /// A PostgreSQL array literal of `items` (for `unnest($1::text[])`): each item quoted,
    /// its `\` and `"` escaped with a backslash. Byte by byte: Foundation's
    /// `replacingOccurrences`, twice a key, took about 8,000 instructions a key (846 a
    /// record of the realistic feed, whose new photographers' keys are looked up).
    static func arrayLiteral<Items: Sequence<String>>(_ items: Items) -> String {
        var literal: [UInt8] = [UInt8(ascii: "{")]
        for (number, item) in items.enumerated() {
            if number > 0 { literal.append(UInt8(ascii: ",")) }
            literal.append(UInt8(ascii: "\""))
            for byte in item.utf8 {
                if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { literal.append(UInt8(ascii: "\\")) }
                literal.append(byte)
            }
            literal.append(UInt8(ascii: "\""))
        }
        literal.append(UInt8(ascii: "}"))
        return String(decoding: literal, as: UTF8.self)
    }

    /// A cell in the text form of its attribute's column (`postgresType`): what COPY
    /// into the entity's own table reads.
    func appendColumnValue(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest,
                           to data: inout ByteBuffer) {
        switch (type, cell) {
        case (_, .null): data.appendBigEndian(UInt16(0x5C4E))
        case (.bool, .int(let number)): data.append(number != 0 ? 0x74 : 0x66)
        case (.bool, .value(let index)):
            if case .bool(let flag) = request.values[Int(index)] { data.append(flag ? 0x74 : 0x66) } else { appendCell(cell, type: type, request, to: &data) }
        case (.date, .double(let seconds)): Self.appendTimestamp(seconds, to: &data)
        case (.date, .value(let index)):
            if case .date(let date) = request.values[Int(index)] { Self.appendTimestamp(date.timeIntervalSinceReferenceDate, to: &data) }
            else { appendCell(cell, type: type, request, to: &data) }
        default: appendCell(cell, type: type, request, to: &data)
        }
    }

    /// Seconds since 2001 as a `timestamptz` literal at UTC, to the microsecond
    /// (`2024-03-05 12:34:56.123456+00`, proleptic Gregorian), without a formatter.
    static func appendTimestamp(_ seconds: Double, to data: inout ByteBuffer) {
        let micros = Int64((seconds * 1_000_000).rounded()) + 978_307_200_000_000
        var whole = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            whole -= 1
        }
        var days = whole / 86_400
        var second = whole % 86_400
        if second < 0 {
            second += 86_400
            days -= 1
        }
        let (year, month, day) = StoredDate.civil(days: days)
        // `2024-03-05 12:34:56.123456+00`: 29 bytes, each digit written in place.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 29) { text in
            func digits(_ value: Int64, _ width: Int, at start: Int) {
                var rest = value
                for index in stride(from: start + width - 1, through: start, by: -1) {
                    text[index] = UInt8(48 + rest % 10)
                    rest /= 10
                }
            }
            digits(year, 4, at: 0)
            text[4] = 0x2D; digits(Int64(month), 2, at: 5)
            text[7] = 0x2D; digits(Int64(day), 2, at: 8)
            text[10] = 0x20; digits(second / 3600, 2, at: 11)
            text[13] = 0x3A; digits(second / 60 % 60, 2, at: 14)
            text[16] = 0x3A; digits(second % 60, 2, at: 17)
            text[19] = 0x2E; digits(fraction, 6, at: 20)
            text[26] = 0x2B; text[27] = 0x30; text[28] = 0x30
            data.append(UnsafeRawBufferPointer(text))
        }
    }

    func appendCell(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest, to data: inout ByteBuffer) {
        switch cell {
        case .null: data.appendBigEndian(UInt16(0x5C4E))
        case .int(let number): Self.appendInteger(number, to: &data)
        case .double(let number): data.append(contentsOf: "\(PostgresValues.stored(number))".utf8)
        case .text(let offset, let count): Self.appendEscaped(request.text[Int(offset)..<Int(offset + count)], to: &data)
        case .value(let index):
            switch request.values[Int(index)] {
            case .int(let number): Self.appendInteger(number, to: &data)
            case .bool(let flag): data.append(flag ? 0x31 : 0x30)
            case .double(let number): data.append(contentsOf: "\(PostgresValues.stored(number))".utf8)
            case .date(let date): data.append(contentsOf: "\(date.timeIntervalSinceReferenceDate)".utf8)
            case .binary(let bytes):
                data.append(contentsOf: "\\\\x".utf8)
                data.append(contentsOf: lowercaseHex(bytes).utf8)
            case let value: Self.appendEscaped((Self.keyText(value) ?? "").utf8, to: &data)
            }
        }
    }

    /// An integer's decimal digits, without making a String.
    static func appendInteger(_ value: Int64, to data: inout ByteBuffer) {
        if value == .min {
            data.append(contentsOf: "-9223372036854775808".utf8)
            return
        }
        var magnitude = value.magnitude
        if value < 0 { data.append(0x2D) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var index = 20
            repeat {
                index -= 1
                buffer[index] = UInt8(48 + magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            data.append(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[index..<20])))
        }
    }

    /// Text in COPY's format: backslash, tab, newline and carriage return escaped. Runs
    /// without one are copied whole (most text has none).
    static func appendEscaped<Bytes: Collection>(_ bytes: Bytes, to data: inout ByteBuffer) where Bytes.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            var start = 0
            for index in 0..<buffer.count {
                let byte = buffer[index]
                guard byte == 0x5C || byte == 0x09 || byte == 0x0A || byte == 0x0D else { continue }
                data.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[start..<index])))
                data.append(0x5C)
                data.append(byte == 0x5C ? 0x5C : byte == 0x09 ? 0x74 : byte == 0x0A ? 0x6E : 0x72)
                start = index + 1
            }
            data.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[start...])))
        }
        guard done == nil else { return }
        appendEscaped(Array(bytes), to: &data)
    }
}
