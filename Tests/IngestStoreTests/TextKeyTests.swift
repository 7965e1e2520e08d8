import Testing
@testable import IngestStore

struct TextKeyTests {
    /// Keys held inline (up to 24 bytes) and on the heap (longer) are equal, hash, sort and
    /// read back by their bytes alone, as PostgreSQL's text keys do.
    @Test(arguments: ["", "a", "p0001234", "é", "e\u{301}", String(repeating: "x", count: 24), String(repeating: "x", count: 25),
                      String(repeating: "ü", count: 40)])
    func aKeyIsItsBytes(text: String) {
        let key = TextKey(text)
        #expect(key.text == text)
        #expect(key == TextKey(bytes: Array(text.utf8)))
        #expect(key.hashValue == TextKey(bytes: Array(text.utf8)).hashValue)
        #expect(key.withUnsafeBytes { Array($0) } == Array(text.utf8))
        #expect(!key.precedes(key))
        #expect(key != TextKey(text + "\u{0}"), "a key and a longer one with the same first bytes differ")
    }

    @Test func keysSortByTheirBytesWhateverTheirLength() {
        let texts = ["", "a", "ab", "b", "e\u{301}", "é", String(repeating: "x", count: 24), String(repeating: "x", count: 25), "y"]
        let sorted = texts.map(TextKey.init).sorted { $0.precedes($1) }.map(\.text)
        #expect(sorted == texts.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(TextKey("é") != TextKey("e\u{301}"), "canonically equal strings with other bytes are two keys")
    }
}
