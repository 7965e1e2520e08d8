@testable import IngestJSON
import Testing
@testable import IngestPipeline

/// The batch path reads numbers from the record's bytes; every double it gives is
/// `Double(String)`'s to the bit, and what it cannot vouch for is left to it.
@Suite struct NumberTextTests {
    static func fast(_ text: String) -> Double? {
        Array(text.utf8).withUnsafeBytes { NumberText.double($0) }
    }

    @Test(arguments: ["0", "-0", "-0.0", "0.0e5", "1", "-1", "47.6062", "-122.3321", "0.1", "0.3", "1e22", "1E-22",
                      "9007199254740992", "123456.789e3", "2.5E+10", "0.000001"])
    func readsCommonNumbersAsDoubleDoes(_ text: String) throws {
        let expected = try #require(Double(text))
        let fast = try #require(Self.fast(text), "\(text) left the fast path")
        #expect(fast.bitPattern == expected.bitPattern, "\(text): \(fast) vs \(expected)")
    }

    /// Too many digits, a mantissa past 2^53, an exponent past ±22, or a form JSON does
    /// not have: nil, for `Double(String)` or the full parser to decide.
    @Test(arguments: ["", "-", "1.", ".5", "+1", "1e", "1e+", "01x", "1.2.3", "--1", "1_0", "12345678901234567890",
                      "9007199254740993", "1e23", "1e-23", "5e-324", "0x10", "inf", "NaN", "1 "])
    func leavesWhatItCannotVouchFor(_ text: String) {
        #expect(Self.fast(text) == nil)
    }

    /// Random decimals as feeds write them (coordinates, prices, measurements).
    @Test func agreesWithDoubleOnRandomDecimals() throws {
        var random = SplitMix64(seed: 42)
        var checked = 0
        for _ in 0..<200_000 {
            let digits = Int.random(in: 1...17, using: &random)
            var text = String(UInt64.random(in: 0..<(1 << 53), using: &random) % UInt64(pow10(digits)))
            let point = Int.random(in: 0...text.count, using: &random)
            if point < text.count { text.insert(".", at: text.index(text.startIndex, offsetBy: point)); if point == 0 { text = "0" + text } }
            if Bool.random(using: &random) { text = "-" + text }
            if Int.random(in: 0..<4, using: &random) == 0 { text += "e\(Int.random(in: -25...25, using: &random))" }
            guard let fast = Self.fast(text) else { continue }
            let expected = try #require(Double(text))
            #expect(fast.bitPattern == expected.bitPattern, "\(text): \(fast) vs \(expected)")
            checked += 1
        }
        #expect(checked > 150_000, "only \(checked) of 200,000 took the fast path")
    }

    private func pow10(_ power: Int) -> Double {
        (0..<power).reduce(1.0) { value, _ in value * 10 }
    }

    @Test(arguments: [("0", Int64(0)), ("-42", -42), ("55302", 55302), ("999999999999999999", 999_999_999_999_999_999)])
    func readsIntegers(_ text: String, _ expected: Int64) {
        #expect(Array(text.utf8).withUnsafeBytes { NumberText.int64($0) } == expected)
    }

    @Test(arguments: ["", "-", "1.0", "1e3", "1234567890123456789", "12a"])
    func leavesOtherIntegersToTheSlowPath(_ text: String) {
        #expect(Array(text.utf8).withUnsafeBytes { NumberText.int64($0) } == nil)
    }
}
