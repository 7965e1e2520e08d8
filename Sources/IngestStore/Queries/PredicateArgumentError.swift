/// A format string's arguments that do not fit its specifiers: too few, too many, or one
/// of a kind its specifier does not take (`%d` given a string). Matchable in `catch`:
///
/// ```swift
/// catch let error as PredicateArgumentError where error.problem == .wrongType { … }
/// ```
///
/// Says what the argument is (`a string`), never its value.
public struct PredicateArgumentError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Problem: String, Sendable, Hashable {
        /// A specifier has no argument left for it.
        case missing
        /// An argument has no specifier: more arguments than the format uses.
        case unused
        /// The argument is of a kind its specifier does not take.
        case wrongType
    }

    public var problem: Problem
    /// 1-based position of the argument among the arguments.
    public var position: Int
    /// The specifier as written (`%d`); nil for an unused argument.
    public var specifier: String?
    /// What the argument is (`a string`, `an object`, `nil`), for a wrong type.
    public var found: String?
    /// 1-based column of the specifier in the format; 0 for an unused argument.
    public var column: Int

    public init(_ problem: Problem, position: Int = 0, specifier: String? = nil, found: String? = nil, column: Int = 0) {
        self.problem = problem
        self.position = position
        self.specifier = specifier
        self.found = found
        self.column = column
    }

    public var description: String {
        let at = column > 0 ? " at column \(column)" : ""
        switch problem {
        case .missing:
            return "\(specifier ?? "a specifier")\(at) needs argument \(position), but only \(position - 1) were given"
        case .unused:
            return "argument \(position) is unused: the format takes \(position - 1)"
        case .wrongType:
            let spec = specifier ?? "its specifier"
            return "argument \(position) is \(found ?? "of another kind"), which \(spec)\(at) does not take (\(Self.takes(spec)))"
        }
    }

    /// What a specifier takes, in words.
    private static func takes(_ specifier: String) -> String {
        switch specifier {
        case "%K": "a key path string"
        case "%d", "%i", "%ld", "%lld": "an integer"
        case "%f": "a number"
        default: "a value, a list, an object or objects"
        }
    }
}
