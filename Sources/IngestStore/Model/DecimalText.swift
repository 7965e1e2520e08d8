import Foundation

/// Decimals as stores keep them: exact numbers, each written in one canonical text.
///
/// A decimal holds any number a feed writes, at any precision, with no `Double` or
/// `Decimal` in between (a 30-digit integer and 0.1 stay exact). Its **canonical form** is
/// plain notation without an exponent, a `+`, leading zeros or trailing zeros after the
/// point, and `0` for zero: `7.800000`, `+7.80` and `78e-1` are all `7.8`, `1E3` is
/// `1000`, `-0.0` is `0`. Every decimal is made canonical where it enters (coercion,
/// `ManagedObject` and batch-request setters, model defaults), so stores hold and print
/// only canonical text.
///
/// Normalised, rather than kept as written and compared by number, because:
/// - equal numbers are then equal bytes, so everything that tells values apart by their
///   bytes (keys and uniqueness constraints, both write paths' "unchanged", `Value`'s `==`,
///   the `reject` rule) takes `7.8` and `7.80` for one value with no numeric comparison
///   on its path;
/// - PostgreSQL's `NUMERIC` keeps the scale as written (`7.800000` reads back with six
///   decimals), so text kept as written would read back differently on the two backends;
///   the canonical form is what `NUMERIC` prints for it, on both;
/// - the scale is not part of the number (Core Data's `NSDecimalNumber` prints `7.80` as `7.8`).
///
/// The range is `NUMERIC`'s: at most 131,072 digits before the point and 16,383 after.
/// Decimals order by number: in memory (`compare`), on SQLite through the
/// `ingest_decimal` collation, on PostgreSQL as `NUMERIC`.
public enum DecimalText {
    /// The most digits a decimal has before its point (PostgreSQL's `NUMERIC` limit).
    public static let maximumIntegerDigits = 131_072
    /// The most digits a decimal has after its point (PostgreSQL's `NUMERIC` limit).
    public static let maximumFractionDigits = 16_383

    /// The canonical text of the number `text` writes (`[+-]digits[.digits][(e|E)[+-]digits]`,
    /// or `.digits` after the sign), or nil when it is not one or is out of range.
    public static func canonical(_ text: String) -> String? {
        var copy = text
        if copy.withUTF8({ isCanonical(UnsafeRawBufferPointer($0)) }) { return text }
        return copy.withUTF8 { canonical(UnsafeRawBufferPointer($0)) }
    }

    /// The canonical text of an integer.
    public static func canonical(_ number: Int64) -> String { String(number) }

    /// The canonical text of the decimal a double prints as (its shortest round-trip
    /// digits: 0.1 is `0.1`, not the binary fraction's 55 digits); nil for NaN and infinities.
    public static func canonical(_ number: Double) -> String? {
        number.isFinite ? canonical("\(number)") : nil
    }

    /// How two decimals' numbers order (-1, 0, 1), whatever their form: `7.8` and `7.80`
    /// are equal. Text that is not a decimal sorts after every number, by its bytes, so
    /// the order is total over any text (as a SQLite collation must be).
    public static func compare(_ a: String, _ b: String) -> Int {
        var (x, y) = (a, b)
        return x.withUTF8 { first in y.withUTF8 { second in compare(UnsafeRawBufferPointer(first), UnsafeRawBufferPointer(second)) } }
    }

    // MARK: - Bytes

    /// Whether `bytes` is a decimal's canonical text already (the usual case: checked
    /// without building anything).
    static func isCanonical(_ bytes: UnsafeRawBufferPointer) -> Bool { canonicalLayout(bytes) != nil }

    /// Whether canonical text `bytes` is negative and how many digits it has before its
    /// point; nil when it is not canonical.
    @inline(__always)
    static func canonicalLayout(_ bytes: UnsafeRawBufferPointer) -> (negative: Bool, integerDigits: Int)? {
        let count = bytes.count
        var index = 0
        let negative = count > 0 && bytes[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        guard index < count else { return nil }
        let integerStart = index
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < count, isDigit(bytes[index]) { index += 1 }
            guard index > integerStart else { return nil }
        }
        let integerDigits = index - integerStart
        guard integerDigits <= maximumIntegerDigits else { return nil }
        if index == count { return negative && bytes[integerStart] == UInt8(ascii: "0") ? nil : (negative, integerDigits) }
        guard bytes[index] == UInt8(ascii: "."), count - index - 1 <= maximumFractionDigits else { return nil }
        index += 1
        let fractionStart = index
        while index < count, isDigit(bytes[index]) { index += 1 }
        guard index == count && index > fractionStart && bytes[count - 1] != UInt8(ascii: "0") else { return nil }
        return (negative, integerDigits)
    }

    /// The canonical text of the decimal in `bytes`, or nil.
    static func canonical(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let number = Parsed(bytes) else { return nil }
        guard !number.isZero else { return "0" }
        let top = number.place(number.first)
        let bottom = number.place(number.last)
        guard top < maximumIntegerDigits, -bottom <= maximumFractionDigits else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(max(top, 0) + max(-bottom, 0) + 3)
        if number.negative { text.append(UInt8(ascii: "-")) }
        if top >= 0 {
            for place in stride(from: top, through: 0, by: -1) { text.append(48 + number.digit(at: place, bytes)) }
        } else {
            text.append(UInt8(ascii: "0"))
        }
        if bottom < 0 {
            text.append(UInt8(ascii: "."))
            for place in stride(from: -1, through: bottom, by: -1) { text.append(48 + number.digit(at: place, bytes)) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `compare(_:_:)` on UTF-8 bytes, with no allocation: the SQLite collation calls it.
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        // What stores hold: the longer integer part is the larger magnitude, and between
        // two of one length (their points, if any, at one place) the bytes order as the
        // digits do: about a third of the cost of reading each number's places (an import
        // of 200k records with two indexed decimals: +9% CPU over byte order, against +25%).
        if let x = canonicalLayout(a), let y = canonicalLayout(b) {
            if x.negative != y.negative { return x.negative ? -1 : 1 }
            var magnitude = x.integerDigits < y.integerDigits ? -1 : x.integerDigits > y.integerDigits ? 1 : 0
            if magnitude == 0 {
                let start = x.negative ? 1 : 0
                let common = min(a.count, b.count) - start
                let order = common > 0 ? memcmp(a.baseAddress! + start, b.baseAddress! + start, common) : 0
                magnitude = order != 0 ? (order < 0 ? -1 : 1) : a.count < b.count ? -1 : a.count > b.count ? 1 : 0
            }
            return x.negative ? -magnitude : magnitude
        }
        guard let x = Parsed(a) else {
            guard Parsed(b) == nil else { return 1 }
            return a.elementsEqual(b) ? 0 : a.lexicographicallyPrecedes(b) ? -1 : 1
        }
        guard let y = Parsed(b) else { return -1 }
        let (xSign, ySign) = (x.sign, y.sign)
        if xSign != ySign { return xSign < ySign ? -1 : 1 }
        if xSign == 0 { return 0 }
        var magnitude = 0
        let (xTop, yTop) = (x.place(x.first), y.place(y.first))
        if xTop != yTop {
            magnitude = xTop < yTop ? -1 : 1
        } else {
            let bottom = min(x.place(x.last), y.place(y.last))
            var place = xTop
            while place >= bottom {
                let (p, q) = (x.digit(at: place, a), y.digit(at: place, b))
                if p != q {
                    magnitude = p < q ? -1 : 1
                    break
                }
                place -= 1
            }
        }
        return xSign < 0 ? -magnitude : magnitude
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- 48 < 10 }

    /// Where the parts of a decimal's text lie, read once.
    struct Parsed {
        var negative = false
        /// The index of the mantissa's point (its end when it has none).
        var point = 0
        /// The indexes of the mantissa's first and last nonzero digits (-1 for zero).
        var first = -1
        var last = -1
        /// The written exponent, saturated far beyond any decimal's range.
        var exponent = 0

        init?(_ bytes: UnsafeRawBufferPointer) {
            let count = bytes.count
            var index = 0
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                negative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var point = -1
            var digits = 0
            while index < count {
                let byte = bytes[index]
                if DecimalText.isDigit(byte) {
                    digits += 1
                    if byte != UInt8(ascii: "0") {
                        if first < 0 { first = index }
                        last = index
                    }
                } else if byte == UInt8(ascii: "."), point < 0 {
                    point = index
                } else {
                    break
                }
                index += 1
            }
            guard digits > 0 else { return nil }
            self.point = point < 0 ? index : point
            if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                var negativeExponent = false
                if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    negativeExponent = bytes[index] == UInt8(ascii: "-")
                    index += 1
                }
                let start = index
                while index < count, DecimalText.isDigit(bytes[index]) {
                    exponent = min(exponent * 10 + Int(bytes[index] - 48), 1 << 40)
                    index += 1
                }
                guard index > start else { return nil }
                if negativeExponent { exponent = -exponent }
            }
            guard index == count else { return nil }
        }

        var isZero: Bool { first < 0 }
        var sign: Int { isZero ? 0 : negative ? -1 : 1 }

        /// The power of ten of the mantissa's digit at `index`.
        func place(_ index: Int) -> Int {
            (index < point ? point - 1 - index : point - index) + exponent
        }

        /// The digit at power of ten `place`: 0 outside the significant digits.
        func digit(at place: Int, _ bytes: UnsafeRawBufferPointer) -> UInt8 {
            let written = place - exponent
            let index = written >= 0 ? point - 1 - written : point - written
            guard index >= first, index <= last else { return 0 }
            return bytes[index] &- 48
        }
    }
}

extension Value {
    /// This value with a decimal made canonical; anything else (text that is no decimal
    /// too: validation names it) as it is.
    var canonicalized: Value {
        guard case .decimal(let text) = self, let canonical = DecimalText.canonical(text) else { return self }
        return .decimal(canonical)
    }
}

extension Model {
    /// Whether an entity has a decimal attribute (which stores keep canonical from format 2).
    var hasDecimals: Bool { entities.contains { $0.attributes.contains { $0.type == .decimal } } }
}
