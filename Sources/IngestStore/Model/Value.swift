public import Foundation

/// An attribute's value. `nil` (as `Value?`) is the absence of a value, SQL NULL.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case binary([UInt8])
    case uuid(UUID)
    /// An exact decimal as text, e.g. "12.34". Stores keep the canonical form
    /// (`DecimalText`): objects and batch requests make `"12.3400"` `"12.34"` when it is set.
    case decimal(String)

    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    public var intValue: Int64? { if case .int(let v) = self { v } else { nil } }
    public var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    public var dateValue: Date? { if case .date(let v) = self { v } else { nil } }
    public var binaryValue: [UInt8]? { if case .binary(let v) = self { v } else { nil } }
    public var uuidValue: UUID? { if case .uuid(let v) = self { v } else { nil } }

    public var description: String {
        switch self {
        case .string(let v): "\"\(v)\""
        case .int(let v): "\(v)"
        case .double(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .date(let v): StoredDate.iso8601(v)
        case .binary(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .decimal(let v): v
        }
    }
}

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// Swift types that convert to and from `Value`, for typed access:
/// `photo.value(forKey: "views", as: Int64.self)`. They are predicate arguments too.
public protocol ValueConvertible: PredicateArgumentConvertible {
    init?(value: Value)
    var value: Value { get }
}

extension String: ValueConvertible {
    public init?(value: Value) { guard case .string(let v) = value else { return nil }; self = v }
    public var value: Value { .string(self) }
}

extension Int64: ValueConvertible {
    public init?(value: Value) { guard case .int(let v) = value else { return nil }; self = v }
    public var value: Value { .int(self) }
}

extension Int: ValueConvertible {
    public init?(value: Value) { guard case .int(let v) = value, let i = Int(exactly: v) else { return nil }; self = i }
    public var value: Value { .int(Int64(self)) }
}

extension Double: ValueConvertible {
    public init?(value: Value) { guard case .double(let v) = value else { return nil }; self = v }
    public var value: Value { .double(self) }
}

extension Bool: ValueConvertible {
    public init?(value: Value) { guard case .bool(let v) = value else { return nil }; self = v }
    public var value: Value { .bool(self) }
}

extension Date: ValueConvertible {
    public init?(value: Value) { guard case .date(let v) = value else { return nil }; self = v }
    public var value: Value { .date(self) }
}

extension UUID: ValueConvertible {
    public init?(value: Value) { guard case .uuid(let v) = value else { return nil }; self = v }
    public var value: Value { .uuid(self) }
}
