import CYajl

/// yajl's own description of why a parse failed, without its "parse error: " prefix
/// and trailing ".\n", ready to go into a sentence.
func yajlErrorMessage(_ handle: yajl_handle) -> String {
    let raw = yajl_get_error(handle, 0, nil, 0)
    var message = raw.map { String(cString: $0) } ?? "parse error"
    if let raw { yajl_free_error(handle, raw) }
    message = message.trimmingSuffix { $0 == "\n" || $0 == "." }
    for prefix in ["lexical error: ", "parse error: "] where message.hasPrefix(prefix) {
        message = String(message.dropFirst(prefix.count))
    }
    return message
}

extension String {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, predicate(last) { text.removeLast() }
        return text
    }
}
