/// Where in a feed something happened: a byte offset from the start of the input
/// (a skipped byte-order mark included) and a 1-based line and column. Columns count
/// Unicode scalars, so a column points at the same character an editor does.
public struct SourcePosition: Sendable, Hashable, Codable, CustomStringConvertible {
    public var byteOffset: Int
    public var line: Int
    public var column: Int

    public init(byteOffset: Int, line: Int, column: Int) {
        self.byteOffset = byteOffset
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column) (byte \(byteOffset))" }
}

/// A feed that cannot be read to the end. Every case names where it happened and
/// carries a short excerpt of the input there, so the message alone is enough to
/// find and fix the problem.
public struct FeedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong; tests and callers match on this, people read `message`.
    public enum Kind: String, Sendable, Codable {
        case malformedJSON
        case notAnArray
        case keyPathNotFound
        case keyPathNotAnArray
        case keyPathRepeated
        case truncated
        case trailingContent
        case invalidUTF8
        case emptyFeed
        case depthLimitExceeded
        case recordTooLarge
        case multipleValuesOnLine
        case unreadable
    }

    public var kind: Kind
    public var message: String
    public var position: SourcePosition
    /// Up to a few dozen bytes around `position`, escaped to one printable line,
    /// with `caret` pointing into it. Empty where no input was at hand.
    public var excerpt: String
    public var caret: Int
    /// The feed's name as the user gave it (a path, or "-" for standard input).
    public var source: String

    public init(
        _ kind: Kind, _ message: String, at position: SourcePosition,
        excerpt: String = "", caret: Int = 0, source: String = ""
    ) {
        self.kind = kind
        self.message = message
        self.position = position
        self.excerpt = excerpt
        self.caret = caret
        self.source = source
    }

    public var description: String {
        var text = source.isEmpty ? "" : "\(source): "
        text += "\(message) at \(position)"
        if !excerpt.isEmpty {
            text += "\n    \(excerpt)\n    \(String(repeating: " ", count: caret))^"
        }
        return text
    }
}
