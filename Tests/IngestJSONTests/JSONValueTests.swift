import Testing
@testable import IngestJSON

/// Numbers pass through exactly and strings decode as JSON says.
@Suite struct JSONValueTests {
    static let exactNumbers = ["9223372036854775807", "-9223372036854775808", "1e400", "123456789012345678901234567890",
                               "-0.0", "1.5E-7", "0", "-1", "3.141592653589793238462643383279"]

    @Test(arguments: exactNumbers)
    func numbersKeepTheirSourceText(_ text: String) throws {
        #expect(try JSONValue.parse(text) == .number(text))
        #expect(try JSONValue.parse("{\"n\": \(text)}")["n"] == .number(text))
        // The feed reader hands the same bytes through as the record.
        #expect(try readRecords("[\(text), {\"n\":\(text)}]").map(\.text) == [text, "{\"n\":\(text)}"])
    }

    @Test func integerBoundsConvertExactly() throws {
        #expect(try JSONValue.parse("-9223372036854775808").int64Value == Int64.min)
        #expect(try JSONValue.parse("9223372036854775807").int64Value == Int64.max)
        #expect(try JSONValue.parse("9223372036854775808").int64Value == nil)
        #expect(try JSONValue.parse("1e400").doubleValue == .infinity)
        #expect(try JSONValue.parse("-0.0").doubleValue?.sign == .minus)
    }

    @Test func numbersFixtureReadsWholeRecordsVerbatim() throws {
        let records = try readRecords(Fixtures.bytes("numbers.json"))
        #expect(records.map(\.text) == ["9223372036854775807", "-9223372036854775808", "1e400",
                                        "123456789012345678901234567890", "-0.0", "1.5E-7",
                                        #"{"big": 1e400, "min": -9223372036854775808}"#])
    }

    @Test func escapesDecode() throws {
        let value = try JSONValue.parse(#""quote \" backslash \\ slash \/ \b\f\n\r\t \u00e9 \u65E5 \u0000 end""#)
        #expect(value == .string("quote \" backslash \\ slash / \u{08}\u{0C}\n\r\t é 日 \u{0} end"))
    }

    @Test func surrogatePairsDecodeToOneScalar() throws {
        #expect(try JSONValue.parse(#""\ud83d\ude00 \uD834\uDD1E""#) == .string("😀 𝄞"))
        #expect(try JSONValue.parse(#"{"\ud83d\ude00": "?"}"#)["😀"] == .string("?"))
    }

    @Test(arguments: [#""\ud800""#, #""a\udc00b""#, #""\ud83d\u0041""#, #"{"\ud800": 1}"#, #"["ok?", "\uDBFF"]"#])
    func loneSurrogatesAreRejectedNotReplaced(_ text: String) throws {
        let error = try #require(throws: FeedError.self) { try JSONValue.parse(text) }
        #expect(error.kind == .invalidUTF8)
        #expect(error.message.hasPrefix("lone surrogate escape \\u"))
    }

    @Test func literalQuestionMarksAreKept() throws {
        #expect(try JSONValue.parse(#"["what?", "\\u003f?"]"#) == .array([.string("what?"), .string("\\u003f?")]))
    }

    @Test func membersKeepOrderAndLookupTakesTheLastDuplicate() throws {
        let value = try JSONValue.parse(#"{"b": 1, "a": [true, null], "b": "two"}"#)
        #expect(value == .object([JSONMember("b", .number("1")), JSONMember("a", .array([.bool(true), .null])),
                                  JSONMember("b", .string("two"))]))
        #expect(value["b"] == .string("two"))
        #expect(value["missing"] == nil)
    }

    @Test func descriptionIsCompactJSONThatParsesBack() throws {
        let text = #"{"s":"line\nbreak \"q\" \u0001 é","n":-0.0,"a":[1e400,true,false,null],"o":{}}"#
        let value = try JSONValue.parse(text)
        #expect(value.description == #"{"s":"line\nbreak \"q\" \u0001 é","n":-0.0,"a":[1e400,true,false,null],"o":{}}"#)
        #expect(try JSONValue.parse(value.description) == value)
    }

    @Test func malformedValuesSayWhere() throws {
        let error = try #require(throws: FeedError.self) { try JSONValue.parse("{\"a\":\n tru}") }
        #expect(error.kind == .malformedJSON)
        #expect(error.position.line == 2)
        #expect(try #require(throws: FeedError.self) { try JSONValue.parse("") }.message == "malformed JSON: empty input")
        #expect(try #require(throws: FeedError.self) { try JSONValue.parse("[1] 2") }.kind == .malformedJSON)
    }

    @Test func compactingRemovesOnlyWhitespaceOutsideStrings() throws {
        let text = "{\n  \"a b\" : [ 1 ,\t2.50 ],\r\n  \"c\\\" \\n\": \"  x  \"\n}"
        let compact = Array(text.utf8).withUnsafeBytes { JSONText.compacted($0) }
        #expect(String(decoding: compact, as: UTF8.self) == "{\"a b\":[1,2.50],\"c\\\" \\n\":\"  x  \"}")
        #expect(try JSONValue.parse(compact) == JSONValue.parse(text))
    }

    /// The mapper's decoder of escaped strings gives what the full parser gives, for
    /// every escape JSON has, pairs and non-ASCII text included.
    @Test(arguments: [#"a\"b"#, #"\\ \/ \b\f\n\r\t"#, #"caf\u00e9 \u00E9"#, #"\ud83d\ude00 after"#,
                      #"\u0000 nul"#, #"plain é and \" 日本"#, #"\uFFFF\u0041"#, #"end\\"#])
    func unescapingAgreesWithTheFullParser(_ contents: String) throws {
        let parsed = try JSONValue.parse(Array("\"\(contents)\"".utf8))
        let decoded = Array(contents.utf8).withUnsafeBytes { JSONText.unescaped($0) }
        #expect(decoded.map(JSONValue.string) == parsed)
    }

    /// What only the full parser may judge is left to it (nil): a lone or reversed
    /// surrogate, an unknown or cut escape, a raw control byte, a short \u.
    @Test(arguments: [#"\ud800"#, #"a\udc00b"#, #"\ud83d\u0041"#, #"\x41"#, #"cut\"#, "tab\there", #"\u12"#, #"\u12G4"#])
    func unescapingLeavesWhatItCannotVouchForToTheParser(_ contents: String) {
        #expect(Array(contents.utf8).withUnsafeBytes { JSONText.unescaped($0) } == nil)
    }

    /// Strings made of escape-prone pieces at random: wherever the full parser reads one,
    /// the decoder gives the same text, and it never vouches for one the parser refuses.
    @Test func unescapingAgreesWithTheParserOnRandomStrings() throws {
        let pieces = [#"\"#, #"\u"#, #"\""#, #"\\"#, "d8", "D83D", "DE00", "dc00", "00e9", "0041", "n", "t", "x", "é", "😀", "a",
                      "0", "\u{1}", " ", "/", "\u{7F}"]
        var random = SplitMix64(seed: 11)
        var agreed = 0
        for _ in 0..<20_000 {
            let contents = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let parsed = try? JSONValue.parse(Array("\"\(contents)\"".utf8))
            let decoded = Array(contents.utf8).withUnsafeBytes { JSONText.unescaped($0) }
            if let parsed {
                #expect(decoded.map(JSONValue.string) == parsed, "\(contents.debugDescription)")
                agreed += 1
            } else {
                #expect(decoded == nil, "\(contents.debugDescription) decoded, the parser refuses it")
            }
        }
        #expect(agreed > 2_000)
    }

    /// A string begun after the value and never closed is refused, as any other content
    /// after it is (yajl alone would finish without a word), named where it starts.
    @Test(arguments: [(#"{"a":1} "abc"#, 8), (#""a"""#, 3), ("[1]\n\"", 4)])
    func contentAfterTheValueIsRefused(_ text: String, _ offset: Int) throws {
        let error = try #require(throws: FeedError.self) { try JSONValue.parse(text) }
        #expect(error.message.hasPrefix("malformed JSON"), "\(error.message)")
        #expect(error.position.byteOffset == offset, "\(text.debugDescription): \(error)")
    }

    @Test(arguments: ["{} ", "[1]\n", "1", " \"a\" ", "-0.5e3\n\t"])
    func whitespaceAfterTheValueIsFine(_ text: String) throws {
        _ = try JSONValue.parse(text)
    }

    /// Text cut short is placed at its end (it said byte 1 whatever the length: yajl's
    /// count of the space it reads to finish).
    @Test(arguments: [(#"{"model": "#, 10), ("[1, 2", 5), ("{\n  \"a\": [\n", 11)])
    func truncatedTextIsPlacedAtItsEnd(_ text: String, _ offset: Int) throws {
        let error = try #require(throws: FeedError.self) { try JSONValue.parse(text) }
        #expect(error.position.byteOffset == offset, "\(error)")
        #expect(error.message.contains("premature EOF"), "\(error)")
    }
}

