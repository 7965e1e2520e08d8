import Foundation
@testable import IngestJSON
import IngestStore
import Testing
@testable import IngestPipeline

/// The mapping table: each JSON type against each attribute type, converted or
/// rejected with its exact reason.
@Suite struct ValueCoercionTests {
    static let json: [(String, JSONValue)] = [
        ("null", .null), ("true", .bool(true)), ("integer", .number("42")), ("negative", .number("-7")),
        ("fraction", .number("2.5")), ("big", .number("123456789012345678901234567890")), ("exp", .number("1e3")),
        ("numeric string", .string("123")), ("word", .string("harbour")), ("yes", .string("Yes")),
        ("iso date", .string("2024-03-05T12:34:56Z")), ("array", .array([.number("1")])), ("object", .object([])),
    ]

    /// Expected outcome for (JSON case, attribute type): a value or a reason.
    static let table: [AttributeType: [String: Result<Value?, CoercionError>]] = [
        .string: [
            "null": .success(nil), "true": .success("true"), "integer": .success("42"), "negative": .success("-7"),
            "fraction": .success("2.5"), "big": .success("123456789012345678901234567890"), "exp": .success("1e3"),
            "numeric string": .success("123"), "word": .success("harbour"), "yes": .success("Yes"),
            "iso date": .success("2024-03-05T12:34:56Z"),
            "array": .failure(CoercionError("expected a string, found an array")),
            "object": .failure(CoercionError("expected a string, found an object")),
        ],
        .int16: [
            "null": .success(nil), "true": .failure(CoercionError("expected an integer, found a boolean")),
            "integer": .success(.int(42)), "negative": .success(.int(-7)),
            "fraction": .failure(CoercionError("2.5 is not an integer")),
            "big": .failure(CoercionError("123456789012345678901234567890 is out of range for int16")),
            "exp": .success(.int(1000)), "numeric string": .success(.int(123)),
            "word": .failure(CoercionError("\"harbour\" is not an integer")),
            "yes": .failure(CoercionError("\"Yes\" is not an integer")),
            "iso date": .failure(CoercionError("\"2024-03-05T12:34:56Z\" is not an integer")),
            "array": .failure(CoercionError("expected an integer, found an array")),
            "object": .failure(CoercionError("expected an integer, found an object")),
        ],
        .double: [
            "null": .success(nil), "true": .failure(CoercionError("expected a number, found a boolean")),
            "integer": .success(.double(42)), "negative": .success(.double(-7)), "fraction": .success(.double(2.5)),
            "big": .success(.double(1.2345678901234568e29)), "exp": .success(.double(1000)),
            "numeric string": .success(.double(123)), "word": .failure(CoercionError("\"harbour\" is not a number")),
            "yes": .failure(CoercionError("\"Yes\" is not a number")),
            "iso date": .failure(CoercionError("\"2024-03-05T12:34:56Z\" is not a number")),
            "array": .failure(CoercionError("expected a number, found an array")),
            "object": .failure(CoercionError("expected a number, found an object")),
        ],
        .bool: [
            "null": .success(nil), "true": .success(true), "integer": .failure(CoercionError("42 is not a boolean (only 0 and 1 are)")),
            "negative": .failure(CoercionError("-7 is not a boolean (only 0 and 1 are)")),
            "fraction": .failure(CoercionError("2.5 is not a boolean (only 0 and 1 are)")),
            "big": .failure(CoercionError("123456789012345678901234567890 is not a boolean (only 0 and 1 are)")),
            "exp": .failure(CoercionError("1e3 is not a boolean (only 0 and 1 are)")),
            "numeric string": .failure(CoercionError("\"123\" is not a boolean (true/false, yes/no, 1/0)")),
            "word": .failure(CoercionError("\"harbour\" is not a boolean (true/false, yes/no, 1/0)")), "yes": .success(true),
            "iso date": .failure(CoercionError("\"2024-03-05T12:34:56Z\" is not a boolean (true/false, yes/no, 1/0)")),
            "array": .failure(CoercionError("expected a boolean, found an array")),
            "object": .failure(CoercionError("expected a boolean, found an object")),
        ],
        .date: [
            "null": .success(nil), "true": .failure(CoercionError("expected a date, found a boolean")),
            "integer": .failure(CoercionError("42 is not a date (expected ISO 8601)")),
            "negative": .failure(CoercionError("-7 is not a date (expected ISO 8601)")),
            "fraction": .failure(CoercionError("2.5 is not a date (expected ISO 8601)")),
            "big": .failure(CoercionError("123456789012345678901234567890 is not a date (expected ISO 8601)")),
            "exp": .failure(CoercionError("1e3 is not a date (expected ISO 8601)")),
            "numeric string": .failure(CoercionError("\"123\" is not a date (expected ISO 8601)")),
            "word": .failure(CoercionError("\"harbour\" is not a date (expected ISO 8601)")),
            "yes": .failure(CoercionError("\"Yes\" is not a date (expected ISO 8601)")),
            "iso date": .success(.date(Date(timeIntervalSince1970: 1_709_642_096))),
            "array": .failure(CoercionError("expected a date, found an array")),
            "object": .failure(CoercionError("expected a date, found an object")),
        ],
    ]

    @Test(arguments: [AttributeType.string, .int16, .double, .bool, .date])
    func eachJSONTypeAgainstEachAttributeType(_ type: AttributeType) throws {
        let expected = try #require(Self.table[type])
        for (name, json) in Self.json {
            let outcome = Result { try ValueCoercion.value(json, for: type) }.mapError { $0 as! CoercionError }
            #expect(outcome == expected[name], "\(name) → \(type.rawValue)")
        }
    }

    @Test func integerWidthsAndExtremes() throws {
        #expect(try ValueCoercion.value(.number("-9223372036854775808"), for: .int64) == .int(Int64.min))
        #expect(try ValueCoercion.value(.number("9223372036854775807"), for: .int64) == .int(Int64.max))
        #expect(throws: CoercionError("9223372036854775808 is out of range for int64")) { try ValueCoercion.value(.number("9223372036854775808"), for: .int64) }
        #expect(throws: CoercionError("40000 is out of range for int16")) { try ValueCoercion.value(.number("40000"), for: .int16) }
        #expect(throws: CoercionError("3000000000 is out of range for int32")) { try ValueCoercion.value(.number("3000000000"), for: .int32) }
        #expect(try ValueCoercion.value(.string(" 17 "), for: .int32) == .int(17))
        #expect(throws: CoercionError("1e400 is out of range for double")) { try ValueCoercion.value(.number("1e400"), for: .double) }
    }

    /// Found by probing: numbers are read as JSON writes them, whether given as numbers or
    /// as strings; Swift's other forms are not numbers in a feed, and a fraction too small
    /// for a double is still a fraction.
    @Test func numbersAreReadAsJSONWritesThemAndTinyFractionsAreNoIntegers() throws {
        for text in ["0x10", "0X1A", "-0x10", "0x1p3", "nan", "inf", "infinity", "1_000"] {
            #expect(throws: CoercionError("\"\(text)\" is not an integer")) { try ValueCoercion.value(.string(text), for: .int64) }
            #expect(throws: CoercionError("\"\(text)\" is not a number")) { try ValueCoercion.value(.string(text), for: .double) }
        }
        #expect(throws: CoercionError("1e-400 is not an integer")) { try ValueCoercion.value(.number("1e-400"), for: .int64) }
        #expect(throws: CoercionError("-1e-999999 is not an integer")) { try ValueCoercion.value(.number("-1e-999999"), for: .int64) }
        #expect(throws: CoercionError("\"1e-400\" is not an integer")) { try ValueCoercion.value(.string("1e-400"), for: .int64) }
        #expect(try ValueCoercion.value(.number("0e-400"), for: .int64) == .int(0))
        #expect(try ValueCoercion.value(.number("-0.0"), for: .int64) == .int(0))
        // The decimal's own value, exactly (as a double it would have been Int64.min).
        #expect(try ValueCoercion.value(.number("-9.2233720368547758e18"), for: .int64) == .int(-9_223_372_036_854_775_800))
        #expect(try ValueCoercion.value(.number("9.21e18"), for: .int64) == .int(9_210_000_000_000_000_000))
        // Worked out from the digits, not through a double (found by probing the first fix).
        for (text, value) in [("-9223372036854775808", Int64.min), ("9223372036854775807.0", Int64.max),
                              ("9.223372036854775807e18", Int64.max), ("9007199254740993.0", 9_007_199_254_740_993),
                              ("12345678901234567.0e0", 12_345_678_901_234_567), ("1.5e1", 15), ("150e-1", 15), ("-0", 0),
                              ("0.0e0", 0), ("1E2", 100), ("1e18", 1_000_000_000_000_000_000), ("9.2233720368547758e18", 9_223_372_036_854_775_800)] {
            #expect(try ValueCoercion.value(.number(text), for: .int64) == .int(value), "\(text)")
        }
        for text in ["-9223372036854775809", "-9223372036854776832", "9223372036854775808", "9.223372036854775808e18", "1e19", "1e400"] {
            #expect(throws: CoercionError("\(text) is out of range for int64"), "\(text)") { try ValueCoercion.value(.number(text), for: .int64) }
        }
        for text in ["12345678901234567.5", "1.0000000000000000001", "1e-1", "0.5"] {
            #expect(throws: CoercionError("\(text) is not an integer"), "\(text)") { try ValueCoercion.value(.number(text), for: .int64) }
        }
        // Blanks around a number given as a string, newlines included, are trimmed alike.
        #expect(try ValueCoercion.value(.string("9\n"), for: .int64) == .int(9))
        #expect(try ValueCoercion.value(.string("\t2.5 "), for: .double) == .double(2.5))
        #expect(try ValueCoercion.value(.number("1e-400"), for: .double) == .double(0), "a double rounds it, as every JSON reader does")
    }

    @Test func datesInEveryFormTheSpecAllows() throws {
        let noon = Date(timeIntervalSince1970: 1_709_640_000)
        #expect(try ValueCoercion.value(.string("2024-03-05T12:00:00Z"), for: .date) == .date(noon))
        #expect(try ValueCoercion.value(.string("2024-03-05T14:00:00+02:00"), for: .date) == .date(noon))
        let withMillis = try #require(try ValueCoercion.value(.string("2024-03-05T12:00:00.250Z"), for: .date)?.dateValue)
        #expect(abs(withMillis.timeIntervalSince(noon) - 0.25) < 1e-6)
        #expect(try ValueCoercion.value(.number("1709640000"), for: .date, dates: [.unixSeconds]) == .date(noon))
        #expect(try ValueCoercion.value(.number("1709640000000"), for: .date, dates: [.unixMilliseconds]) == .date(noon))
        #expect(try ValueCoercion.value(.string("05/03/2024 12:00"), for: .date, dates: [.pattern("dd/MM/yyyy HH:mm")]) == .date(noon))
        #expect(throws: CoercionError("\"tomorrow\" is not a date (expected ISO 8601 or Unix seconds)")) {
            try ValueCoercion.value(.string("tomorrow"), for: .date, dates: [.iso8601, .unixSeconds])
        }
    }

    @Test func uuidBinaryAndDecimal() throws {
        #expect(try ValueCoercion.value(.string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"), for: .uuid)
            == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        #expect(throws: CoercionError("\"nope\" is not a UUID")) { try ValueCoercion.value(.string("nope"), for: .uuid) }
        #expect(try ValueCoercion.value(.string("AAEC/w=="), for: .binary) == .binary([0, 1, 2, 255]))
        #expect(try ValueCoercion.value(.number("12.3400"), for: .decimal) == .decimal("12.34"))
        #expect(try ValueCoercion.value(.string(" +78e-1 "), for: .decimal) == .decimal("7.8"))
        #expect(throws: CoercionError("1e131072 is out of range for decimal (at most 131072 digits before the point and 16383 after)")) {
            try ValueCoercion.value(.number("1e131072"), for: .decimal)
        }
        #expect(throws: CoercionError("\"12,5\" is not a decimal number")) { try ValueCoercion.value(.string("12,5"), for: .decimal) }
    }
}
