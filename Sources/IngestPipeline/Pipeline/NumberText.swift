/// Numbers read straight from a record's bytes on the batch path, or nil for the forms
/// the slow path (`Double(String)`, `ValueCoercion`) must judge.
enum NumberText {
    /// `-?[0-9]{1,18}` as an Int64, or nil (longer or other forms go the slow way).
    static func int64(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index = 1 }
        guard bytes.count > index, bytes.count - index <= 18 else { return nil }
        var value: Int64 = 0
        while index < bytes.count {
            let digit = Int64(bytes[index]) &- 48
            guard digit >= 0 && digit <= 9 else { return nil }
            value = value &* 10 &+ digit
            index += 1
        }
        return negative ? -value : value
    }

    /// Exact powers of ten: every one up to 10^22 is a double without rounding.
    private static let powersOfTen: [Double] = (0...22).map { power in
        var value = 1.0
        for _ in 0..<power { value *= 10 }
        return value
    }

    /// A JSON number of at most 19 digits whose digits, as an integer, fit in a double's
    /// 53 bits and whose decimal exponent is within ±22, as the double nearest to it; nil
    /// for anything else. For those, one multiplication or division of two exact doubles
    /// is correctly rounded (Clinger's fast path), so the result is `Double(String)`'s to
    /// the bit; strtod took about 800 instructions a number (latitude, longitude).
    static func double(_ bytes: UnsafeRawBufferPointer) -> Double? {
        let count = bytes.count
        var index = 0
        let negative = count > 0 && bytes[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        func digit(at position: Int) -> UInt64? {
            guard position < count else { return nil }
            let value = bytes[position] &- UInt8(ascii: "0")
            return value < 10 ? UInt64(value) : nil
        }
        guard digit(at: index) != nil else { return nil }
        while let value = digit(at: index) {
            mantissa = mantissa &* 10 &+ value
            digits += 1
            index += 1
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digit(at: index) != nil else { return nil }
            while let value = digit(at: index) {
                mantissa = mantissa &* 10 &+ value
                digits += 1
                fractionDigits += 1
                index += 1
            }
        }
        var exponent = 0
        if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            var exponentNegative = false
            if index < count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            guard digit(at: index) != nil else { return nil }
            while let value = digit(at: index) {
                guard exponent < 1_000 else { return nil }
                exponent = exponent * 10 + Int(value)
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        guard index == count, digits <= 19 else { return nil }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        let power = exponent - fractionDigits
        guard mantissa <= 1 << 53, (-22...22).contains(power) else { return nil }
        let magnitude = power >= 0 ? Double(mantissa) * powersOfTen[power] : Double(mantissa) / powersOfTen[-power]
        return negative ? -magnitude : magnitude
    }
}
