import Foundation

/// A command-line argument written so that a shell reads it back as it is: bare when it
/// holds only characters no shell treats specially, else in single quotes. The commands the
/// messages suggest (`continue with: ingest join …`) can then be pasted: a PostgreSQL URL
/// with `?host=…&port=…` broke at the `&` (found by probing).
package enum ShellWord {
    package static func quoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "@%+=:,./_-".utf8.contains(byte)
            }
        }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
