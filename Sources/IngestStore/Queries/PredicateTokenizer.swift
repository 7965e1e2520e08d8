import Foundation

struct PredicateToken: Equatable {
    enum Kind: Equatable {
        case word(String)          // identifiers and keywords
        case aggregate(String)     // @count, @sum …
        case string(String)
        case number(String)
        case symbol(String)        // = == != <> < <= > >= && || ! ( ) { } , .
        case options(PredicateComparison.Options)
        case format(String)        // @ K d i ld lld f
        case variable(String)
    }
    var kind: Kind
    var column: Int
}

enum PredicateTokenizer {
    @_optimize(none)
    static func tokens(_ text: String) throws -> [PredicateToken] {
        let chars = Array(text)
        var tokens: [PredicateToken] = []
        var i = 0
        func isWordStart(_ c: Character) -> Bool { c.isLetter || c == "_" }
        func isWord(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
        while i < chars.count {
            let c = chars[i]
            let column = i + 1
            if c.isWhitespace { i += 1; continue }
            if isWordStart(c) {
                var j = i
                while j < chars.count, isWord(chars[j]) { j += 1 }
                tokens.append(.init(kind: .word(String(chars[i..<j])), column: column))
                i = j
            } else if c == "@" {
                var j = i + 1
                while j < chars.count, isWord(chars[j]) { j += 1 }
                guard j > i + 1 else { throw QueryPredicateError("expected an aggregate name after '@'", column: column) }
                tokens.append(.init(kind: .aggregate(String(chars[(i + 1)..<j]).lowercased()), column: column))
                i = j
            } else if c == "$" {
                var j = i + 1
                while j < chars.count, isWord(chars[j]) { j += 1 }
                guard j > i + 1 else { throw QueryPredicateError("expected a variable name after '$'", column: column) }
                tokens.append(.init(kind: .variable(String(chars[(i + 1)..<j])), column: column))
                i = j
            } else if c == "\"" || c == "'" {
                var value = ""
                var j = i + 1
                var closed = false
                while j < chars.count {
                    let d = chars[j]
                    if d == c { closed = true; j += 1; break }
                    if d == "\\" {
                        guard j + 1 < chars.count else { break }
                        let e = chars[j + 1]
                        switch e {
                        case "n": value.append("\n")
                        case "t": value.append("\t")
                        case "r": value.append("\r")
                        case "u":
                            guard j + 5 < chars.count, let code = UInt32(String(chars[(j + 2)...(j + 5)]), radix: 16),
                                  let scalar = Unicode.Scalar(code) else {
                                throw QueryPredicateError("expected four hex digits after \\u", column: j + 1)
                            }
                            value.unicodeScalars.append(scalar)
                            j += 4
                        default: value.append(e)
                        }
                        j += 2
                        continue
                    }
                    value.append(d)
                    j += 1
                }
                guard closed else { throw QueryPredicateError("unterminated string", column: column) }
                tokens.append(.init(kind: .string(value), column: column))
                i = j
            } else if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber) {
                var j = i + 1
                while j < chars.count, chars[j].isNumber || chars[j] == "." || chars[j] == "e" || chars[j] == "E"
                    || ((chars[j] == "-" || chars[j] == "+") && (chars[j - 1] == "e" || chars[j - 1] == "E")) {
                    j += 1
                }
                tokens.append(.init(kind: .number(String(chars[i..<j])), column: column))
                i = j
            } else if c == "%" {
                let rest = String(chars[(i + 1)..<min(chars.count, i + 4)])
                let spec = ["lld", "ld", "@", "K", "d", "i", "f"].first { rest.hasPrefix($0) }
                guard let spec else { throw QueryPredicateError("unknown format specifier '%\(rest.prefix(1))'", column: column) }
                tokens.append(.init(kind: .format(spec), column: column))
                i += 1 + spec.count
            } else if c == "[" {
                guard let close = chars[i...].firstIndex(of: "]") else { throw QueryPredicateError("unclosed '['", column: column) }
                var options: PredicateComparison.Options = []
                for flag in chars[(i + 1)..<close] {
                    switch flag {
                    case "c": options.insert(.caseInsensitive)
                    case "d": options.insert(.diacriticInsensitive)
                    case "n": break  // normalized: accepted, as NSPredicate does
                    default: throw QueryPredicateError("unknown comparison option '\(flag)' (expected c, d or cd)", column: column)
                    }
                }
                tokens.append(.init(kind: .options(options), column: column))
                i = close + 1
            } else {
                let two = i + 1 < chars.count ? String(chars[i...(i + 1)]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                    let normalized = ["=<": "<=", "=>": ">=", "<>": "!="][two] ?? two
                    tokens.append(.init(kind: .symbol(normalized), column: column))
                    i += 2
                } else if "=<>!(){},.".contains(c) {
                    tokens.append(.init(kind: .symbol(String(c)), column: column))
                    i += 1
                } else {
                    throw QueryPredicateError("unexpected character '\(c)'", column: column)
                }
            }
        }
        return tokens
    }
}
