import Testing
@testable import IngestJSON

/// Every kind of bad input gets its own error, at the right line and column,
/// however the input is cut into reads.
@Suite struct FeedReaderErrorTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var input: [UInt8]
        var shape: FeedShape = .array
        var kind: FeedError.Kind
        var line: Int
        var column: Int
        var offset: Int
        var message: String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "missing colon", input: Array("[\n  {\"a\": 1},\n  {\"b\" 2}\n]\n".utf8),
             kind: .malformedJSON, line: 3, column: 8, offset: 21,
             message: "malformed JSON: object key and value must be separated by a colon (':')"),
        // yajl stops past (or steps back into) a refused token of more than one byte: each
        // is located at its first byte, as a refused bracket or comma is.
        Case(name: "a string where a comma belongs", input: Array("[{\"a\": 1 \"b\": 2}]".utf8),
             kind: .malformedJSON, line: 1, column: 10, offset: 9,
             message: "malformed JSON: after key and value, inside map, I expect ',' or '}'"),
        Case(name: "a number where a comma belongs, lines down", input: Array("[\n {\"a\": 1},\n {\"t\": \"x\\\"y\" 553}\n]".utf8),
             kind: .malformedJSON, line: 3, column: 15, offset: 27,
             message: "malformed JSON: after key and value, inside map, I expect ',' or '}'"),
        Case(name: "a record where a comma belongs", input: Array("[1 \"two\"]".utf8),
             kind: .malformedJSON, line: 1, column: 4, offset: 3, message: "malformed JSON: after array element, I expect ',' or ']'"),
        Case(name: "a literal where a comma belongs, in an array", input: Array("[[1 true]]".utf8),
             kind: .malformedJSON, line: 1, column: 5, offset: 4, message: "malformed JSON: after array element, I expect ',' or ']'"),
        Case(name: "a number as a key", input: Array("[{\"a\": {12: 1}}]".utf8),
             kind: .malformedJSON, line: 1, column: 9, offset: 8, message: "malformed JSON: invalid object key (must be a string)"),
        Case(name: "a string where the colon belongs", input: Array("[{\"a\" \"bc\"}]".utf8),
             kind: .malformedJSON, line: 1, column: 7, offset: 6,
             message: "malformed JSON: object key and value must be separated by a colon (':')"),
        Case(name: "a string where the colon belongs, in NDJSON", input: Array("{\"a\": 1}\n{\"b\" \"c\"}\n".utf8), shape: .ndjson,
             kind: .malformedJSON, line: 2, column: 6, offset: 14,
             message: "malformed JSON: object key and value must be separated by a colon (':')"),
        Case(name: "a comma where a value belongs", input: Array("[{\"a\":[1,,2]}]".utf8),
             kind: .malformedJSON, line: 1, column: 10, offset: 9, message: "malformed JSON: unallowed token at this point in JSON text"),
        Case(name: "a comma where a member's value belongs", input: Array("[{\"a\":,\"b\":1}]".utf8),
             kind: .malformedJSON, line: 1, column: 7, offset: 6, message: "malformed JSON: unallowed token at this point in JSON text"),
        // Two tokens with nothing between them, as yajl's lexer tells them apart (found by probing).
        Case(name: "a literal straight after a number", input: Array("[{\"a\":1},{\"b\":12true}]".utf8),
             kind: .malformedJSON, line: 1, column: 17, offset: 16,
             message: "malformed JSON: after key and value, inside map, I expect ',' or '}'"),
        Case(name: "a digit after a leading zero", input: Array("[{\"a\":1},{\"b\":01}]".utf8),
             kind: .malformedJSON, line: 1, column: 16, offset: 15,
             message: "malformed JSON: after key and value, inside map, I expect ',' or '}'"),
        Case(name: "null straight after an exponent", input: Array("[{\"abc\":-0.5e+3null}]".utf8),
             kind: .malformedJSON, line: 1, column: 16, offset: 15,
             message: "malformed JSON: after key and value, inside map, I expect ',' or '}'"),
        Case(name: "a literal straight after a number, in an array record", input: Array("[[12true]]".utf8),
             kind: .malformedJSON, line: 1, column: 5, offset: 4, message: "malformed JSON: after array element, I expect ',' or ']'"),
        Case(name: "a misspelt literal", input: Array("[{\"b\":trux}]".utf8),
             kind: .malformedJSON, line: 1, column: 7, offset: 6, message: "malformed JSON: invalid literal (JSON's literals are true, false and null)"),
        Case(name: "a literal cut short", input: Array("[nul]".utf8),
             kind: .malformedJSON, line: 1, column: 2, offset: 1, message: "malformed JSON: invalid literal (JSON's literals are true, false and null)"),
        Case(name: "stray character", input: Array("[1, @]".utf8),
             kind: .malformedJSON, line: 1, column: 5, offset: 4, message: "malformed JSON: invalid char in json text"),
        Case(name: "object at top level", input: Array("{\"a\": 1}".utf8),
             kind: .notAnArray, line: 1, column: 1, offset: 0,
             message: "expected a top-level array of records, found an object"),
        Case(name: "string at top level", input: Array("\n  \"text\"".utf8),
             kind: .notAnArray, line: 2, column: 9, offset: 9, message: "expected a top-level array of records, found a string"),
        Case(name: "missing key path", input: Array("{\"type\": \"x\", \"items\": []}".utf8), shape: .keyPath(["features"]),
             kind: .keyPathNotFound, line: 1, column: 27, offset: 26,
             message: "no array at key path 'features' (top-level keys: 'type', 'items')"),
        Case(name: "key path to an object", input: Array("{\"features\": {\"a\": 1}}".utf8), shape: .keyPath(["features"]),
             kind: .keyPathNotAnArray, line: 1, column: 14, offset: 13,
             message: "the value at key path 'features' is an object, not an array of records (its values are records when the feed is read as keyed)"),
        Case(name: "key path twice", input: Array("{\"f\": [1],\n \"f\": [2]}".utf8), shape: .keyPath(["f"]),
             kind: .keyPathRepeated, line: 2, column: 5, offset: 15, message: "key path 'f' occurs more than once in the feed"),
        Case(name: "truncated inside a record", input: Array("[{\"a\": 1},\n {\"b\": ".utf8),
             kind: .truncated, line: 2, column: 8, offset: 18, message: "truncated input: the feed ends inside record 2"),
        Case(name: "truncated before the array closes", input: Array("[1,\n2".utf8),
             kind: .truncated, line: 2, column: 2, offset: 5,
             message: "truncated input: the feed ends before the records array is closed"),
        Case(name: "trailing content", input: Array("[1, 2]\n]\n".utf8),
             kind: .trailingContent, line: 2, column: 1, offset: 7,
             message: "unexpected content after the end of the top-level value"),
        Case(name: "a number after the closing bracket", input: Array("[\n\n]\n42".utf8),
             kind: .trailingContent, line: 4, column: 1, offset: 5,
             message: "unexpected content after the end of the top-level value"),
        // yajl itself takes a string begun after the end and never closed for a token to come.
        Case(name: "an unclosed string after the closing bracket", input: Array("[{\"a\":1}]\n  \"abc".utf8),
             kind: .trailingContent, line: 2, column: 3, offset: 12,
             message: "unexpected content after the end of the top-level value"),
        Case(name: "a lone quote after a keyed feed's object", input: Array("{\"k\": {\"a\": 1}} \"".utf8), shape: .keyed([]),
             kind: .trailingContent, line: 1, column: 17, offset: 16,
             message: "unexpected content after the end of the top-level value"),
        Case(name: "an unclosed string after the last NDJSON record", input: Array("{\"a\":1}\n\"abc".utf8), shape: .ndjson,
             kind: .truncated, line: 2, column: 5, offset: 12, message: "truncated input: the feed ends inside record 2"),
        Case(name: "an unclosed string after a CRLF-ended NDJSON record", input: Array("1\r\n\"".utf8), shape: .ndjson,
             kind: .truncated, line: 2, column: 2, offset: 4, message: "truncated input: the feed ends inside record 2"),
        Case(name: "a feed that is one unclosed string", input: Array("\"abc".utf8),
             kind: .truncated, line: 1, column: 5, offset: 4, message: "truncated input: the feed ends inside its first value"),
        Case(name: "truncated after the records array, in its object", input: Array("{\"d\":[{\"a\":1}]".utf8), shape: .keyPath(["d"]),
             kind: .truncated, line: 1, column: 15, offset: 14, message: "truncated input: the feed ends before the top-level value is closed"),
        Case(name: "truncated keyed records", input: Array("{\"k1\":{\"a\":1}".utf8), shape: .keyed([]),
             kind: .truncated, line: 1, column: 14, offset: 13, message: "truncated input: the feed ends before the object of records is closed"),
        Case(name: "a member on the key path given again after the records", input: Array("{\"data\":{\"items\":[{\"a\":1}]},\"data\":5}".utf8),
             shape: .keyPath(["data", "items"]), kind: .keyPathRepeated, line: 1, column: 35, offset: 34,
             message: "key path 'data.items' occurs more than once in the feed ('data' is given again after the records)"),
        Case(name: "a lead byte without its continuation byte", input: Array("[\"".utf8) + [0xE0, 0x72] + Array("\"]".utf8),
             kind: .invalidUTF8, line: 1, column: 3, offset: 2, message: "invalid UTF-8 inside a string"),
        Case(name: "invalid UTF-8 in a string", input: Array("[{\"name\": \"caf".utf8) + [0xE9] + Array("\"}]".utf8),
             kind: .invalidUTF8, line: 1, column: 15, offset: 14, message: "invalid UTF-8 inside a string"),
        Case(name: "invalid UTF-8 outside a string", input: Array("[1,\n ".utf8) + [0xFF] + Array("]".utf8),
             kind: .invalidUTF8, line: 2, column: 2, offset: 5, message: "invalid UTF-8 byte outside a string"),
        Case(name: "empty file", input: [],
             kind: .emptyFeed, line: 1, column: 1, offset: 0, message: "the feed is empty (0 bytes)"),
        Case(name: "only whitespace", input: Array(" \n\n ".utf8),
             kind: .emptyFeed, line: 3, column: 2, offset: 4, message: "the feed holds no JSON value (4 bytes of whitespace)"),
        Case(name: "empty NDJSON", input: Array("\n\n".utf8), shape: .ndjson,
             kind: .emptyFeed, line: 3, column: 1, offset: 2, message: "the feed holds no JSON value (2 bytes of whitespace)"),
        Case(name: "two NDJSON values on one line", input: Array("{\"id\":1}\n{\"id\":2} {\"id\":3}\n".utf8), shape: .ndjson,
             kind: .multipleValuesOnLine, line: 2, column: 10, offset: 18,
             message: "record 3 starts on the line of the record before it (NDJSON holds one value per line)"),
        Case(name: "truncated NDJSON", input: Array("{\"id\":1}\n{\"id\":".utf8), shape: .ndjson,
             kind: .truncated, line: 2, column: 7, offset: 15, message: "truncated input: the feed ends inside record 2"),
    ]

    @Test(arguments: cases)
    func badInputGetsItsOwnLocatedError(_ testCase: Case) throws {
        for readSize in [Int.max, 1, 2, 3, 7] {
            let error = try #require(feedError(testCase.input, shape: testCase.shape, readSize: readSize),
                                     "read size \(readSize)")
            #expect(error.kind == testCase.kind, "read size \(readSize)")
            #expect(error.message == testCase.message, "read size \(readSize)")
            #expect(error.position == SourcePosition(byteOffset: testCase.offset, line: testCase.line, column: testCase.column),
                    "read size \(readSize)")
        }
    }

    /// Valid UTF-8 that JSON does not allow between values is no invalid UTF-8 (it was
    /// called so). Reads as the reader makes them; a character cut by a read's end cannot
    /// be judged by what was read and is reported as before.
    @Test(arguments: [("{\"a\":1}\u{2028}{\"a\":2}\n", FeedShape.ndjson, 7), ("[\u{A0}{\"a\":1}]", FeedShape.array, 1)])
    func aValidCharacterWhereJSONAllowsNoneIsNamedForWhatItIs(_ text: String, _ shape: FeedShape, _ offset: Int) throws {
        for readSize in [Int.max, 4_096] {
            let error = try #require(feedError(Array(text.utf8), shape: shape, readSize: readSize))
            #expect(error.kind == .malformedJSON)
            #expect(error.message == "malformed JSON: a character outside a string where JSON allows only whitespace, brackets, commas, colons and values")
            #expect(error.position.byteOffset == offset)
        }
    }

    @Test func errorDescriptionShowsAnExcerptWithACaret() throws {
        let error = try #require(feedError(Array("[\n  {\"a\": 1},\n  {\"b\" 2}\n]\n".utf8)))
        #expect(error.description == """
            test: malformed JSON: object key and value must be separated by a colon (':') at line 3, column 8 (byte 21)
                  {"b" 2}
                       ^
            """)
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let error = try #require(feedError(Array("[\"é日本\", @]".utf8)))
        #expect(error.position.column == 9)
        #expect(error.position.byteOffset == 13)
    }

    @Test func malformedFixturesFailFromFiles() throws {
        let expected: [(String, FeedShape, FeedError.Kind)] = [
            ("missing-colon.json", .array, .malformedJSON), ("not-an-array.json", .array, .notAnArray),
            ("truncated.json", .array, .truncated), ("trailing-content.json", .array, .trailingContent),
            ("invalid-utf8.json", .array, .invalidUTF8), ("empty.json", .array, .emptyFeed),
            ("two-per-line.ndjson", .ndjson, .multipleValuesOnLine),
        ]
        for (name, shape, kind) in expected {
            let reader = try FeedReader(path: Fixtures.path("malformed/" + name), options: FeedOptions(shape: shape))
            let error = try #require(throws: FeedError.self) { try reader.read { _ in } }
            #expect(error.kind == kind, "\(name)")
            #expect(error.source.hasSuffix(name))
        }
    }
}

/// A record over a limit is read past, not held, and handed on refused with the error that
/// names it (the importer rejects it, and the run goes on); a record so large that reading
/// past it would hold twice the size limit stops the feed with that error.
@Suite struct FeedLimitTests {
    @Test func depthLimitNamesTheRecordAndTheFeedGoesOn() throws {
        let (refused, records) = try refusedRecords(Array("[[1], [[[2]]], [3]]".utf8), maxDepth: 3)
        #expect(records == 3)
        let error = try #require(refused[1])
        #expect(refused.count == 1)
        #expect(error.kind == .depthLimitExceeded)
        #expect(error.message == "record 2 nests deeper than the limit of 3 levels")
        #expect(error.position.byteOffset == 8)
        #expect(try readRecords(Array("[[1], [[2]]]".utf8), maxDepth: 3).count == 2)
        #expect(feedError(Array("[[1], [[[2]]], [3}]".utf8), maxDepth: 3)?.kind == .malformedJSON, "a refused record is still parsed")
    }

    @Test func deepNestingBeyondTheDefaultIsRefusedNotACrash() throws {
        let deep = Array(repeating: UInt8(ascii: "["), count: 10_000) + Array(repeating: UInt8(ascii: "]"), count: 10_000)
        let (refused, records) = try refusedRecords(deep)
        #expect(records == 1)
        #expect(refused[0]?.kind == .depthLimitExceeded)
        #expect(refused[0]?.message == "record 1 nests deeper than the limit of 512 levels")
    }

    @Test(arguments: [Int.max, 1, 5])
    func recordSizeLimitNamesTheRecord(readSize: Int) throws {
        let feed = Array("[\"short\", \"a much longer record\", 1]".utf8)
        let (refused, records) = try refusedRecords(feed, readSize: readSize, maxRecordBytes: 12)
        #expect(records == 3)
        #expect(refused[1]?.kind == .recordTooLarge)
        #expect(refused[1]?.message == "record 2 (from byte 10) is 22 bytes, over the record size limit of 12 bytes", "\(refused[1]?.message ?? "")")
        #expect(try readRecords(feed, maxRecordBytes: 22).count == 3)
        // Past twice the limit the feed stops, whether the record ends inside a read or across reads.
        let error = try #require(feedError(feed, readSize: readSize, maxRecordBytes: 5))
        #expect(error.kind == .recordTooLarge)
        #expect(error.message == "record 2 (from byte 10) is larger than 10 bytes, twice the record size limit of 5 bytes: the feed is not read past it")
    }

    @Test func whitespaceBetweenRecordsDoesNotCountTowardsTheLimit() throws {
        let feed = Array("[1,".utf8) + Array(repeating: UInt8(ascii: " "), count: 10_000) + Array("2]".utf8)
        #expect(try readRecords(feed, readSize: 100, maxRecordBytes: 4).map(\.text) == ["1", "2"])
    }
}

/// The commands messages suggest can be pasted into a shell as they are printed.
@Suite struct ShellWordTests {
    @Test func wordsAShellWouldSplitOrExpandAreQuoted() {
        #expect(ShellWord.quoted("/tmp/feed.json") == "/tmp/feed.json")
        #expect(ShellWord.quoted("postgresql://u@h:5432/photos") == "postgresql://u@h:5432/photos")
        #expect(ShellWord.quoted("postgresql://postgres@/p?host=/tmp/pg&port=5998") == "'postgresql://postgres@/p?host=/tmp/pg&port=5998'")
        #expect(ShellWord.quoted("my feed.json") == "'my feed.json'")
        #expect(ShellWord.quoted("it's") == #"'it'\''s'"#)
        #expect(ShellWord.quoted("") == "''")
    }
}
