import Foundation

/// A value handed to a format string or to `substituting(_:)`: for %@ (a value, a list,
/// an object or a list of objects), %K (a key path, as a string), %d %i %ld %lld
/// (integers), %f (doubles).
///
/// Swift values convert to it by themselves (`PredicateArgumentConvertible`): pass
/// `title`, `views`, `photographer` or `["a", "b"]` as they are.
public enum PredicateArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral {
    case value(Value?)
    case list([Value?])
    /// An object, for comparing a to-one relationship with it (`whoTook == %@`).
    case object(ObjectID)
    /// Objects (nil for "no object"), for `whoTook IN %@`.
    case objects([ObjectID?])

    public init(stringLiteral value: String) { self = .value(.string(value)) }
    public init(integerLiteral value: Int64) { self = .value(.int(value)) }
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
    public init(booleanLiteral value: Bool) { self = .value(.bool(value)) }
    public init(nilLiteral: ()) { self = .value(nil) }
    public init(arrayLiteral elements: Value?...) { self = .list(elements) }

    /// The expression the argument stands for in a predicate.
    var expression: PredicateExpression {
        switch self {
        case .value(let value): .value(value)
        case .list(let values): .list(values)
        case .object(let id): .object(id)
        case .objects(let ids): .objects(ids)
        }
    }

    /// What the argument is, for error messages (never its value: values stay out of them).
    var kind: String {
        switch self {
        case .value(nil): "nil"
        case .value(.string?): "a string"
        case .value(.int?): "an integer"
        case .value(.double?): "a double"
        case .value(.bool?): "a boolean"
        case .value(.date?): "a date"
        case .value(.binary?): "binary data"
        case .value(.uuid?): "a UUID"
        case .value(.decimal?): "a decimal"
        case .list: "a list"
        case .object: "an object"
        case .objects: "a list of objects"
        }
    }
}

/// A Swift value a predicate takes as an argument, as it is:
/// `QueryPredicate(format: "title == %@ AND whoTook == %@", title, photographer)`.
///
/// Strings, integers, floating-point numbers, booleans, dates, UUIDs, `Data`, `Decimal`
/// and every `ValueConvertible` are values; `ManagedObject`s, typed objects and
/// `ObjectID`s are objects; arrays and sets of either are lists (for IN); an optional
/// that is nil is nil.
public protocol PredicateArgumentConvertible {
    /// The argument this value stands for.
    /// - Throws: `PredicateArgumentError` (`.wrongType`) for a value that stands for none,
    ///   such as a list holding lists, or both objects and values.
    func predicateArgument() throws -> PredicateArgument
}

extension PredicateArgument: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { self }
}

extension Value: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(self) }
}

extension ValueConvertible {
    public func predicateArgument() -> PredicateArgument { .value(value) }
}

// Integers and floats no attribute holds, but that callers have at hand.
extension Int8: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(.int(Int64(self))) }
}
extension UInt8: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(.int(Int64(self))) }
}
extension UInt16: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(.int(Int64(self))) }
}
extension UInt32: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(.int(Int64(self))) }
}
extension Float: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .value(.double(Double(self))) }
}

extension ObjectID: PredicateArgumentConvertible {
    public func predicateArgument() -> PredicateArgument { .object(self) }
}

extension ManagedObject: PredicateArgumentConvertible {
    /// The object's ID: an object inserted and not yet saved is named by its temporary ID,
    /// which stored rows never hold.
    public func predicateArgument() -> PredicateArgument { .object(objectID) }
}

extension TypedObject {
    public func predicateArgument() -> PredicateArgument { .object(managedObject.objectID) }
}

extension Optional: PredicateArgumentConvertible where Wrapped: PredicateArgumentConvertible {
    public func predicateArgument() throws -> PredicateArgument {
        try self?.predicateArgument() ?? .value(nil)
    }
}

extension Array: PredicateArgumentConvertible where Element: PredicateArgumentConvertible {
    /// A list of values, or of objects; nil may stand in either.
    public func predicateArgument() throws -> PredicateArgument {
        try PredicateArgument.list(of: map { try $0.predicateArgument() })
    }
}

extension Set: PredicateArgumentConvertible where Element: PredicateArgumentConvertible {
    public func predicateArgument() throws -> PredicateArgument {
        try PredicateArgument.list(of: map { try $0.predicateArgument() })
    }
}

extension PredicateArgument {
    /// One list of the members' values, or of their objects.
    /// - Throws: `PredicateArgumentError` (`.wrongType`) when members are lists, or objects and values both.
    static func list(of members: [PredicateArgument]) throws -> PredicateArgument {
        var values: [Value?] = []
        var objects: [ObjectID?] = []
        var hasValues = false
        for member in members {
            switch member {
            case .value(nil):
                values.append(nil)
                objects.append(nil)
            case .value(let value?):
                hasValues = true
                values.append(value)
            case .object(let id):
                objects.append(id)
            case .list, .objects:
                throw PredicateArgumentError(.wrongType, found: "a list holding lists")
            }
        }
        let hasObjects = objects.contains { $0 != nil }
        if hasObjects && hasValues { throw PredicateArgumentError(.wrongType, found: "a list holding objects and values") }
        return hasObjects ? .objects(objects) : .list(values)
    }
}
