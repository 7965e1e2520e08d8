import Foundation

extension DecodingError {
    /// One line for people: where in the JSON (`entities[0].attributes[1].type`) and what
    /// is wrong there, without Swift's type names and debug text.
    public var plainDescription: String {
        func place(_ path: [any CodingKey]) -> String {
            var text = ""
            for key in path {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "the top level" : text
        }
        func kind(_ type: Any.Type) -> String {
            switch type {
            case is Bool.Type: "a boolean (true or false)"
            case is String.Type: "a string"
            case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type: "a whole number"
            case is Double.Type: "a number"
            case is [Any].Type: "an array"
            case is [String: Any].Type: "an object"
            default: "a value of another kind"
            }
        }
        switch self {
        case .typeMismatch(let type, let context):
            return "\(place(context.codingPath)): expected \(kind(type))"
        case .valueNotFound(let type, let context):
            return "\(place(context.codingPath)): expected \(kind(type)), found null or nothing"
        case .keyNotFound(let key, let context):
            return "\(place(context.codingPath)): '\(key.stringValue)' is missing"
        case .dataCorrupted(let context):
            let reason = context.underlyingError.map { "not valid JSON (\($0.localizedDescription))" } ?? context.debugDescription
            return "\(place(context.codingPath)): \(reason)"
        @unknown default:
            return "\(self)"
        }
    }
}
