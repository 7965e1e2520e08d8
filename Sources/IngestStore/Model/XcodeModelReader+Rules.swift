import Foundation

extension XcodeModelReader {
    /// Xcode's "Validation" fields: `minValueString`/`maxValueString` are a number's bounds,
    /// or a string's (or binary data's) length; a date's bounds are `minDateTimeInterval`/
    /// `maxDateTimeInterval`; `regularExpressionString` a string's pattern.
    @_optimize(none)
    func rules(_ element: [String: String], _ type: AttributeType, place: String, _ xcodeType: String,
               _ problems: inout [String]) -> AttributeRules {
        var rules = AttributeRules()
        func bound(_ field: String) -> Value? {
            guard let text = element[field] else { return nil }
            let value: Value? = switch type {
            case .int16, .int32, .int64, .double, .decimal: Self.value(text, type)
            case .date: Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
            default: nil
            }
            if value == nil { problems.append("\(place): the \(field) \"\(text)\" is not a valid \(xcodeType) bound") }
            return value
        }
        func length(_ field: String) -> Int? {
            guard let text = element[field] else { return nil }
            guard let length = Int(text), length >= 0 else {
                problems.append("\(place): the \(field) \"\(text)\" is not a length")
                return nil
            }
            return length
        }
        switch type {
        case .string, .binary:
            rules.minimumLength = length("minValueString")
            rules.maximumLength = length("maxValueString")
        case .date:
            rules.minimum = bound("minDateTimeInterval")
            rules.maximum = bound("maxDateTimeInterval")
        case .bool, .uuid:
            for field in ["minValueString", "maxValueString"] where element[field] != nil {
                problems.append("\(place): \(field) does not apply to a \(xcodeType) attribute")
            }
        default:
            rules.minimum = bound("minValueString")
            rules.maximum = bound("maxValueString")
        }
        if let pattern = element["regularExpressionString"] {
            if type != .string {
                problems.append("\(place): regularExpressionString applies to String attributes only")
            } else if (try? NSRegularExpression(pattern: pattern)) == nil {
                problems.append("\(place): the regular expression \(pattern) is not valid")
            } else {
                rules.pattern = pattern
            }
        }
        return rules
    }
}
