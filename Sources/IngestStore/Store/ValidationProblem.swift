/// One reason a save failed validation (`StoreError.validation`): which object, which
/// property, which rule, and what is wrong, with the sentence messages show.
///
/// Problems are equal when they read the same (`description`): a problem written as text,
/// as a string literal (`StoreError.validation(["Photo \"p\": orientation is required"])`),
/// equals the problem the store reports with those words.
public struct ValidationProblem: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The rule an object broke.
    public enum Rule: String, Sendable, Hashable {
        /// A required attribute has no value.
        case required
        /// A value is not of its attribute's type.
        case type
        /// A date outside the dates a store holds (0001-01-01 to 9999-12-31 UTC).
        case dateRange
        /// A value the store's backend cannot hold (PostgreSQL text holding U+0000).
        case storable
        /// An object to delete has related objects through a relationship with the deny rule.
        case deleteDenied
        /// A value less than its attribute's minimum (`AttributeRules.minimum`).
        case minimum
        /// A value more than its attribute's maximum.
        case maximum
        /// A string or binary value shorter than its attribute's minimum length.
        case minimumLength
        /// A string or binary value longer than its attribute's maximum length.
        case maximumLength
        /// A string that does not match its attribute's regular expression.
        case pattern
        /// An error thrown by an entity's own `validateForInsert`, `validateForUpdate` or
        /// `validateForDelete` (see `EntityLifecycle`): its message is the error's description.
        case custom
        /// A problem given as text, without its parts.
        case unspecified
    }

    /// The object as messages name it: its entity and key (`Event 17`), its row, `a new
    /// Event`, or (for a delete) its object ID.
    public var object: String
    /// The object's ID (temporary for a new object); nil for a problem given as text.
    public var objectID: ObjectID?
    /// The object's entity ("" for a problem given as text).
    public var entity: String
    /// The values of the object's uniqueness key, in the key's order; empty when it has none
    /// or they are not all set.
    public var key: [Value]
    /// The attribute or relationship, when the problem is about one.
    public var property: String?
    public var rule: Rule
    /// What is wrong, without the object and property (`is required`, `… is not a valid int64`).
    public var message: String

    public init(object: String, objectID: ObjectID?, entity: String, key: [Value] = [], property: String?, rule: Rule, message: String) {
        self.object = object
        self.objectID = objectID
        self.entity = entity
        self.key = key
        self.property = property
        self.rule = rule
        self.message = message
    }

    /// A problem given as text: `rule` is `.unspecified` and `message` the whole text.
    public init(stringLiteral text: String) {
        self.init(object: "", objectID: nil, entity: "", property: nil, rule: .unspecified, message: text)
    }

    public var description: String {
        switch rule {
        case .unspecified: message
        case .required: "\(object): \(property ?? "") \(message)"
        case .deleteDenied: "cannot delete \(object): \(entity).\(property ?? "") \(message)"
        case .type, .dateRange, .storable, .minimum, .maximum, .minimumLength, .maximumLength, .pattern:
            "\(object): \(property ?? ""): \(message)"
        case .custom: property.map { "\(object): \($0): \(message)" } ?? "\(object): \(message)"
        }
    }

    public static func == (lhs: ValidationProblem, rhs: ValidationProblem) -> Bool { lhs.description == rhs.description }

    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}
