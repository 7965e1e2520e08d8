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

    public var description: String { line > 0 ? "line \(line), column \(column) (byte \(byteOffset))" : "byte \(byteOffset)" }

    /// The line and column of `byteOffset` in the feed at `path` (inflated, when it is
    /// gzip), read again from its start: for errors found after the reader moved on (a
    /// record's shape). Only the byte offset (line 0) when the feed cannot be read again.
    public static func locate(byteOffset: Int, inFeed path: String) -> SourcePosition {
        var position = SourcePosition(byteOffset: byteOffset, line: 0, column: 0)
        guard !FileOps.isReadOnce(path), let source = try? FeedByteSource(path: path) else { return position }
        var (line, column, read) = (1, 1, 0)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while read < byteOffset {
            let count = (try? buffer.withUnsafeMutableBytes { try source.read(into: $0) }) ?? 0
            guard count > 0 else { return position }
            for byte in buffer[0..<min(count, byteOffset - read)] {
                if byte == 0x0A {
                    (line, column) = (line + 1, 1)
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            read += count
        }
        (position.line, position.column) = (line, column)
        return position
    }
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
