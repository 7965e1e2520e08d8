import Foundation

// New rows in COPY's binary format. The cells are typed already (the mapper parsed each
// number and date once); the text format had the client print them and the server parse
// them again, and escape and unescape every text value. A batch whose cells do not all
// fit their columns' binary form as the text form would have stored them goes as text,
// so that the server judges it exactly as before.
extension PostgresBatchWriter {
    /// COPY's binary header: signature, flags, header extension length.
    private static let binaryHeader: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// Microseconds from 2000-01-01 (PostgreSQL's epoch) to 2001-01-01 (the cells' reference date).
    private static let epochOffsetMicros: Int64 = 31_622_400_000_000

    /// Whether every cell of `entries` has a binary form that stores what its text form does.
    func binaryEncodable(_ entries: [Int], of batch: EntityBatch, entity: Int, _ request: BatchInsertRequest) -> Bool {
        let types = plans[entity].info.attributeTypes
        for index in entries {
            for position in 0..<batch.folded[index].cellCount
            where !Self.binaryEncodable(batch.cell(position, of: index, request), type: types[position], request) {
                return false
            }
        }
        return true
    }

    private static func binaryEncodable(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest) -> Bool {
        switch (type, cell) {
        case (_, .null), (.string, _), (.uuid, _): true
        // Canonical (`BatchInsertRequest.set` made it so): `numeric`'s binary form is made from it.
        case (.decimal, .value(let index)): request.values[Int(index)].decimalText != nil
        case (.int64, .int), (.double, .int), (.double, .double), (.bool, .int), (.date, .double): true
        case (.int32, .int(let number)): Int32(exactly: number) != nil
        case (.int16, .int(let number)): Int16(exactly: number) != nil
        case (_, .value(let index)):
            switch (type, request.values[Int(index)]) {
            case (.int64, .int), (.int64, .bool), (.double, .int), (.double, .double), (.bool, .bool), (.date, .date), (.binary, .binary): true
            case (.int32, .int(let number)): Int32(exactly: number) != nil
            case (.int16, .int(let number)): Int16(exactly: number) != nil
            default: false
            }
        default: false
        }
    }

    /// New rows (entries `entries` of `batch`) in COPY's binary format: row number, cells, links.
    /// Call `binaryEncodable` first: a cell without a binary form is sent as NULL.
    func appendNewRowsBinary(_ entries: [Int], of batch: EntityBatch, entity: Int, _ request: BatchInsertRequest, numbered: Bool = true,
                             linked: (Int, Int, Int32) -> Int64?, to stream: inout CopyStream) {
        let types = plans[entity].info.attributeTypes
        Self.binaryHeader.withUnsafeBytes { stream.data.append($0) }
        request.text.withUnsafeBytes { text in
            for index in entries {
                let entry = batch.folded[index]
                Self.appendBigEndian(UInt16((numbered ? 1 : 0) + entry.cellCount + batch.linkCount), to: &stream.data)
                if numbered { Self.appendField(UInt64(bitPattern: entry.pk), to: &stream.data) }
                for position in 0..<entry.cellCount {
                    appendBinary(batch.cell(position, of: index, request), type: types[position], request, text: text, to: &stream.data)
                }
                for number in 0..<batch.linkCount {
                    if let pk = linked(entity, number, batch.links[index * batch.linkCount + number]) {
                        Self.appendField(UInt64(bitPattern: pk), to: &stream.data)
                    } else {
                        Self.appendBigEndian(UInt32(bitPattern: -1), to: &stream.data)
                    }
                }
                stream.rowEnded()
            }
        }
        Self.appendBigEndian(UInt16(bitPattern: -1), to: &stream.data)
    }

    private func appendBinary(_ cell: BatchInsertRequest.Cell, type: AttributeType, _ request: BatchInsertRequest,
                              text: UnsafeRawBufferPointer, to data: inout ByteBuffer) {
        func integer(_ number: Int64) {
            switch type {
            case .int16: Self.appendBigEndian(UInt32(2), to: &data); Self.appendBigEndian(UInt16(bitPattern: Int16(truncatingIfNeeded: number)), to: &data)
            case .int32: Self.appendBigEndian(UInt32(4), to: &data); Self.appendBigEndian(UInt32(bitPattern: Int32(truncatingIfNeeded: number)), to: &data)
            case .double: Self.appendField(Double(number).bitPattern, to: &data)
            case .bool: Self.appendBigEndian(UInt32(1), to: &data); data.append(number != 0 ? 1 : 0)
            default: Self.appendField(UInt64(bitPattern: number), to: &data)
            }
        }
        func timestamp(_ seconds: Double) {
            // As the text form's literal reads: rounded to the microsecond.
            Self.appendField(UInt64(bitPattern: Int64((seconds * 1_000_000).rounded()) + Self.epochOffsetMicros), to: &data)
        }
        func bytes(_ body: (inout ByteBuffer) -> Void) {
            let start = data.count
            data.appendBigEndian(UInt32(0))
            body(&data)
            data.setBigEndian(UInt32(data.count - start - 4), at: start)
        }
        switch (type, cell) {
        case (_, .null):
            Self.appendBigEndian(UInt32(bitPattern: -1), to: &data)
        case (.decimal, .value(let index)):
            if case .decimal(let text) = request.values[Int(index)] {
                bytes { Self.appendNumeric(text, to: &$0) }
            } else {
                Self.appendBigEndian(UInt32(bitPattern: -1), to: &data)
            }
        case (.string, _), (.uuid, _):
            // What the text form stores, unescaped (`appendCell`).
            switch cell {
            case .text(let offset, let count):
                // The usual cell: its length is known before its bytes.
                Self.appendBigEndian(UInt32(count), to: &data)
                data.append(UnsafeRawBufferPointer(rebasing: text[Int(offset)..<Int(offset + count)]))
            case .int(let number): bytes { Self.appendInteger(number, to: &$0) }
            case .double(let number): bytes { $0.append(contentsOf: "\(number)".utf8) }
            case .value(let index):
                bytes { out in
                    switch request.values[Int(index)] {
                    case .int(let number): Self.appendInteger(number, to: &out)
                    case .bool(let flag): out.append(flag ? 0x31 : 0x30)
                    case .double(let number): out.append(contentsOf: "\(number)".utf8)
                    case .date(let date): out.append(contentsOf: "\(date.timeIntervalSinceReferenceDate)".utf8)
                    case .binary(let value): out.append(contentsOf: ("\\x" + lowercaseHex(value)).utf8)
                    case let value: out.append(contentsOf: (Self.keyText(value) ?? "").utf8)
                    }
                }
            case .null: break
            }
        case (.date, .double(let seconds)): timestamp(seconds)
        case (_, .double(let number)): Self.appendField(PostgresValues.stored(number).bitPattern, to: &data)
        case (_, .int(let number)): integer(number)
        case (_, .value(let index)):
            switch request.values[Int(index)] {
            case .int(let number): integer(number)
            case .bool(let flag): integer(flag ? 1 : 0)
            case .double(let number): Self.appendField(PostgresValues.stored(number).bitPattern, to: &data)
            case .date(let date): timestamp(date.timeIntervalSinceReferenceDate)
            case .binary(let value):
                Self.appendBigEndian(UInt32(value.count), to: &data)
                data.append(contentsOf: value)
            default: Self.appendBigEndian(UInt32(bitPattern: -1), to: &data)
            }
        default:
            Self.appendBigEndian(UInt32(bitPattern: -1), to: &data)
        }
    }

    /// A canonical decimal (`DecimalText`) in `numeric`'s binary form: the count of base-10000
    /// digits, the power of 10000 of the first (its weight), the sign, the digits after the
    /// point (display scale), then the digits, each 16 bits big-endian. Zero has no digits.
    static func appendNumeric(_ text: String, to data: inout ByteBuffer) {
        var text = text
        text.withUTF8 { bytes in
            let negative = bytes.first == UInt8(ascii: "-")
            let start = negative ? 1 : 0
            let point = bytes[start...].firstIndex(of: UInt8(ascii: ".")) ?? bytes.count
            // "0.5" has no integer digits to send; a fraction's last group is padded with zeros.
            let integer = bytes[start] == UInt8(ascii: "0") ? start..<start : start..<point
            let fraction = min(point + 1, bytes.count)..<bytes.count
            var groups: [UInt16] = []
            groups.reserveCapacity((integer.count + fraction.count) / 4 + 2)
            var weight = (integer.count + 3) / 4 - 1
            var index = integer.lowerBound
            var take = integer.count - weight * 4
            while index < integer.upperBound {
                var group: UInt16 = 0
                for _ in 0..<take {
                    group = group * 10 + UInt16(bytes[index] - 48)
                    index += 1
                }
                groups.append(group)
                take = 4
            }
            index = fraction.lowerBound
            while index < fraction.upperBound {
                var group: UInt16 = 0
                for offset in 0..<4 {
                    group = group * 10 + (index + offset < fraction.upperBound ? UInt16(bytes[index + offset] - 48) : 0)
                }
                groups.append(group)
                index += 4
            }
            let first = groups.firstIndex { $0 != 0 } ?? groups.count
            let last = (groups.lastIndex { $0 != 0 } ?? -1) + 1
            weight = first < last ? weight - first : 0
            appendBigEndian(UInt16(max(last - first, 0)), to: &data)
            appendBigEndian(UInt16(bitPattern: Int16(weight)), to: &data)
            appendBigEndian(UInt16(negative ? 0x4000 : 0), to: &data)
            appendBigEndian(UInt16(fraction.count), to: &data)
            if first < last { for group in groups[first..<last] { appendBigEndian(group, to: &data) } }
        }
    }

    /// An eight-byte field: its length, then the value, both big-endian.
    @inline(__always)
    private static func appendField(_ value: UInt64, to data: inout ByteBuffer) {
        appendBigEndian(UInt32(8), to: &data)
        appendBigEndian(value, to: &data)
    }

    @inline(__always)
    private static func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer, to data: inout ByteBuffer) {
        data.appendBigEndian(value)
    }
}
