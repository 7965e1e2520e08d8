import Foundation
import Testing
@testable import IngestStore

/// A decimal's canonical text and its order by number (`DecimalText`), which the stores and
/// in-memory predicates share.
@Suite struct DecimalTextTests {
    static let thirty = "123456789012345678901234567890"

    @Test(arguments: [
        ("7.8", "7.8"), ("7.800000", "7.8"), ("7.80", "7.8"), ("+7.8", "7.8"), ("78e-1", "7.8"), ("0.78E+1", "7.8"),
        ("1E3", "1000"), ("100", "100"), ("-0.0", "0"), ("0", "0"), ("000.000", "0"), ("-0", "0"), (".5", "0.5"),
        ("5.", "5"), ("-00012.3400e2", "-1234"), ("1e-7", "0.0000001"), ("0.1", "0.1"), ("-1", "-1"), ("9.25", "9.25"),
        ("0e999999999999999", "0"), (thirty, thirty), ("1234567890123456789012345678.90e2", thirty),
    ])
    func everyWayOfWritingADecimalHasOneCanonicalForm(written: String, canonical: String) {
        #expect(DecimalText.canonical(written) == canonical)
        #expect(DecimalText.canonical(canonical) == canonical)
        #expect(DecimalText.compare(written, canonical) == 0)
    }

    @Test(arguments: ["", "-", "+", ".", "-.", "e5", "1e", "1e+", "1.2.3", "0x10", "nan", "inf", " 1", "1 ", "1,5", "--1", "1e5.5", "١٢"])
    func textThatIsNoDecimalHasNoCanonicalForm(text: String) {
        #expect(DecimalText.canonical(text) == nil)
    }

    /// PostgreSQL's `numeric` range, on both backends.
    @Test func theRangeIsNumericsOnEveryBackend() {
        #expect(DecimalText.canonical("1e131071")?.count == 131_072)
        #expect(DecimalText.canonical("1e131072") == nil)
        #expect(DecimalText.canonical("-1e-16383")?.count == 16_386)
        #expect(DecimalText.canonical("1e-16384") == nil)
        #expect(DecimalText.canonical("1e99999999999999999999999") == nil)
        #expect(DecimalText.canonical("0.5e-16383") == nil)
    }

    @Test func decimalsOrderByNumberAndTextThatIsNoneAfterThem() {
        let ascending = ["-100", "-9.25", "-1", "-0.5", "0", "0.1", "1", "9.25", "10.5", "100", Self.thirty, "1e400", "abc", "abd"]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                #expect(DecimalText.compare(a, b) == (i < j ? -1 : i > j ? 1 : 0), "\(a) vs \(b)")
            }
        }
        #expect(DecimalText.compare("78e-1", "+7.800") == 0)
        #expect(DecimalText.compare("1e2", "99.999999999999999999999999") == 1)
        #expect(DecimalText.compare("123456789012345678901234567889", Self.thirty) == -1)
    }

    /// Random decimals written in random equivalent forms: one canonical text, and the
    /// order of Foundation's `Decimal` (exact at these sizes).
    @Test func randomDecimalsAgreeWithFoundationsDecimal() {
        var generator = SystemRandomNumberGenerator()
        func written(_ significand: Int64, _ exponent: Int) -> String {
            // The same number with zeros moved between the digits and the exponent, a sign, a point.
            let shift = Int.random(in: 0...3, using: &generator)
            var digits = String(significand.magnitude) + String(repeating: "0", count: shift)
            let exponent = exponent - shift
            let point = Int.random(in: 0...digits.count, using: &generator)
            digits.insert(".", at: digits.index(digits.startIndex, offsetBy: point))
            let sign = significand < 0 ? "-" : Bool.random(using: &generator) ? "+" : ""
            return sign + digits + "e" + String(exponent + (digits.count - 1 - point))
        }
        for _ in 0..<2_000 {
            let numbers = (0..<2).map { _ in
                (Int64.random(in: -999_999_999_999...999_999_999_999, using: &generator) / Int64(pow(10, Double(Int.random(in: 0...11, using: &generator)))),
                 Int.random(in: -20...20, using: &generator))
            }
            let texts = numbers.map { written($0.0, $0.1) }
            let decimals = numbers.map { Decimal(sign: $0.0 < 0 ? .minus : .plus, exponent: $0.1, significand: Decimal($0.0.magnitude)) }
            #expect(DecimalText.canonical(texts[0]) == DecimalText.canonical(written(numbers[0].0, numbers[0].1)), "\(texts[0])")
            let expected = decimals[0] < decimals[1] ? -1 : decimals[0] > decimals[1] ? 1 : 0
            #expect(DecimalText.compare(texts[0], texts[1]) == expected, "\(texts[0]) vs \(texts[1])")
            // Canonical text, as stores hold it, compares by its layout and bytes: the same order.
            let canonical = texts.map { DecimalText.canonical($0)! }
            #expect(DecimalText.compare(canonical[0], canonical[1]) == expected, "\(canonical[0]) vs \(canonical[1])")
            #expect(DecimalText.compare(canonical[0], texts[1]) == expected, "\(canonical[0]) vs \(texts[1])")
            #expect(DecimalText.canonical(texts[0]).flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } == decimals[0], "\(texts[0])")
        }
    }
}
